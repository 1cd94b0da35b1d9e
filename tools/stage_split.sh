#!/usr/bin/env bash
# Re-packs what ../shared/device/stage.sh staged (.device/a, .device/b) into carries that fit the
# device tool's 64 MiB per call beside this checkout's tracked files, which grow with docs/results:
# .device/s1 .. .device/sN, each sent by one call in turn, the last holding the wheels (mujoco,
# mujoco-warp and the extra NAME==VERSION wheels stage.sh was given) and install.sh.
#   bash ../shared/device/stage.sh [NAME==VERSION ...] && bash tools/stage_split.sh
# Tracked files missing from the working tree do not travel: moving docs/results and docs/media
# aside (mv them to /tmp, put them back after the device calls) leaves room for fewer, larger carries.
# Device calls (the same machine, back to back):
#   carry [".device/s1"]: rm -rf /tmp/stage && mkdir -p /tmp/stage && cp .device/s1/* /tmp/stage/
#   carry [".device/sK"]: cp .device/sK/* /tmp/stage/   (each .device/sK but the first and the last)
#   carry [".device/sN"]: bash .device/sN/install.sh && export PYTHONPATH=/tmp/site:$PWD/src && COMMAND
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
[ -f .device/a/warp.txz.part-a ] && [ -f .device/b/warp.txz.part-b ] || { echo "run ../shared/device/stage.sh first" >&2; exit 2; }
# What travels beside a carry: the tracked files and the untracked ones git does not ignore.
# (du skips tracked files missing from the working tree: they do not travel.)
tree=$( (git ls-files -z -co --exclude-standard | du -cb --files0-from=- 2>/dev/null || true) | tail -1 | cut -f1)
room=$((64 * 1024 * 1024 - tree - 4 * 1024 * 1024))  # 4 MiB for the transfer's own overhead
[ "$room" -gt $((8 * 1024 * 1024)) ] || { echo "the tracked tree ($tree bytes) leaves no room to carry" >&2; exit 2; }
wheels=$(mktemp -d)
cp .device/b/*.whl "$wheels/"
cat .device/a/warp.txz.part-a .device/b/warp.txz.part-b > "$wheels/warp.txz"
split -b "$room" -d -a 2 "$wheels/warp.txz" "$wheels/warp.txz.part-"
rm "$wheels/warp.txz"
parts=$(ls "$wheels"/warp.txz.part-* | wc -l)
rm -rf .device/s[0-9]*
n=0
for part in "$wheels"/warp.txz.part-*; do
  n=$((n + 1)); mkdir -p ".device/s$n"; mv "$part" ".device/s$n/"
done
last=".device/s$n"
if [ $(( $(du -cb "$last"/* "$wheels"/*.whl | tail -1 | cut -f1) )) -gt "$room" ]; then
  n=$((n + 1)); last=".device/s$n"; mkdir -p "$last"
fi
mv "$wheels"/*.whl "$last/"
rm -rf "$wheels"
echo "$parts" > "$last/warp-parts"
cat > "$last/install.sh" <<'EOS'
#!/usr/bin/env bash
# Joins warp's parts (the earlier ones in /tmp/stage, a last one here if any) and installs it and
# the wheels beside this script into /tmp/site.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/stage
cp "$here"/warp.txz.part-* /tmp/stage/ 2>/dev/null || true
shopt -s nullglob
parts=(/tmp/stage/warp.txz.part-*)
if [ "${#parts[@]}" -ne "$(cat "$here/warp-parts")" ]; then
  echo "stage: /tmp/stage holds ${#parts[@]} of $(cat "$here/warp-parts") warp parts: send .device/s1 (which clears it) and the others first" >&2
  exit 3
fi
mkdir -p /tmp/site
cat "${parts[@]}" | xz -d | tar -C /tmp/site -xf -
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$here"/*.whl
python3 -c "import sys; sys.path.insert(0, '/tmp/site'); import warp, mujoco, mujoco_warp; print('stage: warp', warp.__version__, 'mujoco', mujoco.__version__, 'ready in /tmp/site')"
EOS
chmod +x "$last/install.sh"
du -sb .device/s[0-9]* | sed "s#^#carry ($((tree / 1048576)) MiB of tracked files beside each): #"
