# Sourced by the GPU scripts that time a launch: compiles the Python bytecode of phalanx and its
# dependencies once, as `pip install` does (the device machine sets PYTHONDONTWRITEBYTECODE, which
# would make every process compile its sources), into $PYTHONPYCACHEPREFIX.
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX:-/tmp/pyc}
python3 -m compileall -q -j 0 $(python3 -c '
import importlib.util
for name in ("torch", "warp", "mujoco_warp", "mujoco", "numpy", "phalanx", "tyro", "rich"):
    spec = importlib.util.find_spec(name)
    print(spec.submodule_search_locations[0] if spec and spec.submodule_search_locations else "")
') > /dev/null 2>&1
