"""phalanx's import layers, read statically (pure `ast`: nothing is imported, so this runs in milliseconds).

The package is a stack. Each layer may import from the layers below it and from itself, never from above:

    7  bench, cli, gym, view, flags         the commands a user runs (`phalanx view` is view.py), their flag
                                            helpers; Gymnasium's ids for every task
    6  training, cfg, tasks                 training, the app: TrainCfg, tasks by name (tasks call `register`,
                                            the registry loads them by name), the run, the trainer loop,
                                            checkpoints, play, export, the other libraries' runs; cfg: every
                                            config a task file needs, from one module
    5  wrappers, viewer                     adapters to other RL libraries' contracts over any VecEnv; the web
                                            page of a few envs (and of a training run, which training opens)
    4  rl                                   the algorithm: PPO, its losses, storage, models and kernels
    3  envs, dist                           term-based envs / data-parallel plumbing, independent of each other
    2  sensors                              batched sensors computed from the simulator's state
    1  sim, terrain, control                MuJoCo Warp simulation / procedural terrain / batched controllers
                                            on tensors (the QP solver), independent of each other
    0  core, assets                         errors, files, lazy imports, devices, torch.compile's helpers,
                                            Warp's start and streams, configs as data, the VecEnv contract;
                                            phalanx's robot models

`phalanx/__init__.py` (it only re-exports, lazily) and `phalanx/__main__.py` (the very top) are exempt.

Why: a lower layer that imports a higher one drags the heavy parts in (Warp, the whole env stack) where only
config data was wanted, makes import cycles likely, and ties pieces that should be usable and testable alone
(the simulator without envs, the learner and the adapters without envs or the task registry).

Checked over every .py file under src/phalanx. An import counts where it runs: at module level, inside a
function (lazy), through `importlib.import_module` with a literal (or f-string prefix), and through a table of
module names that code imports by key (`_LAZY = {name: "phalanx.x"}` behind module `__getattr__`; every
value of a module-level dict that `import_module(TABLE[key])` reads, e.g. training's `ADAPTERS`). Imports
under `if TYPE_CHECKING:` are type-only and never run, so they are left out of the cycle and layer checks.
The rules:

1. No import cycle among the imports that run when a module is imported (module level: top-level statements,
   including inside top-level try/if/class bodies; not function bodies, not TYPE_CHECKING).
2. No cycle between top-level subpackages among all imports that can run (lazy ones and tables included),
   but the registry loading phalanx's own tasks by name (`PLUGIN_LOADS`: they register themselves, as a
   plugin's entry point does).
3. No back arrow between layers (every import that can run), plus the named rules in `NAMED_RULES` (envs and
   dist independent, envs never imports rl, wrappers never import envs, ...), and `COMPOSERS`: only training
   and the commands put an env and a learner together.
4. No `from X import _private` across top-level subpackages (within one subpackage, e.g. envs.mdp.rewards
   from envs.mdp.observations, it is the subpackage's own business). This one counts type-only imports too.

Tests under tests/ may import anything and are not checked.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = "phalanx"

LAYERS: dict[str, int] = {
    "core": 0,
    "assets": 0,
    "sim": 1,
    "terrain": 1,
    "control": 1,
    "sensors": 2,
    "dist": 3,
    "envs": 3,
    "rl": 4,
    "wrappers": 5,
    "viewer": 5,
    "training": 6,
    "cfg": 6,
    "tasks": 6,
    "bench": 7,
    "cli": 7,
    "gym": 7,
    "view": 7,
    "flags": 7,
}
EXEMPT = {"phalanx", "phalanx.__main__"}

# Spelled out because they are the requirements; the layer numbers above imply most of them.
# (importer subpackages, subpackages they must never import, why)
BELOW_TRAINING = frozenset(part for part, level in LAYERS.items() if level < LAYERS["training"])
NAMED_RULES: list[tuple[frozenset[str], frozenset[str], str]] = [
    (frozenset({"envs"}), frozenset({"dist"}), "envs and dist are independent: envs never imports dist"),
    (frozenset({"dist"}), frozenset({"envs"}), "envs and dist are independent: dist never imports envs"),
    (frozenset({"envs"}), frozenset({"rl"}), "envs never imports rl (the learner sits on top of any env)"),
    (frozenset({"rl"}), frozenset({"envs", "training"}), "rl is the algorithm: it imports no envs and no training"),
    (
        frozenset({"envs"}),
        frozenset({"control"}),
        "envs never imports control: a task that acts through a controller "
        "brings that action in its own mdp/ (tasks/anymal/mdp, tasks/franka/mdp)",
    ),
    (frozenset({"terrain"}), frozenset({"envs"}), "terrain never imports envs (pure generation; envs place robots)"),
    (frozenset({"sim"}), frozenset({"envs", "rl", "terrain"}), "sim never imports envs, rl or terrain"),
    (frozenset({"control"}), frozenset({"sim", "terrain"}), "control works on tensors: never imports sim or terrain"),
    (BELOW_TRAINING, frozenset({"training", "tasks"}), "nothing below training imports it (the registry) or tasks"),
    (
        frozenset({"wrappers"}),
        frozenset({"envs", "training"}),
        "wrappers know an env only as a core.vec_env.VecEnv and import no training (training runs them)",
    ),
    (
        frozenset({"viewer"}),
        frozenset({"training", "flags"}),
        "the viewer imports no training and no flags: training opens its page (--viewer), "
        "the `phalanx view` command (phalanx.view) composes the registry, a policy and the page",
    ),
]

COMMANDS = frozenset(part for part, level in LAYERS.items() if level == max(LAYERS.values()))
COMPOSERS = frozenset({"training"}) | COMMANDS
"""The only subpackages that put an env (envs, or the registry that makes them) and a learner (rl beyond its
config data, or another library's adapter) together."""
RL_CONFIG = frozenset({"phalanx.rl.cfg", "phalanx.rl.off_policy_cfg"})
"""rl's config data: tasks and cfg name the algorithm's settings without composing a learner."""

PLUGIN_LOADS = frozenset({("phalanx.training.registry", "phalanx.tasks")})
"""(importer, imported) pairs by which a registry loads modules that register themselves: left out of the
cycle check between packages (rule 2)."""


@dataclass(frozen=True)
class Import:
    importer: str  # module doing the import, e.g. "phalanx.envs.cfg"
    imported: str  # module imported, resolved to a module of the package where one matches
    name: str | None  # for `from X import name`: the name; else None
    path: str  # file of the importer, relative to the repository root
    line: int
    module_level: bool  # runs when the importer is imported (not inside a function)
    type_only: bool  # under `if TYPE_CHECKING:`

    def __str__(self) -> str:
        what = f"{self.importer} -> {self.imported}"
        if self.name is not None and not self.imported.endswith(f".{self.name}"):
            what += f" ({self.name})"
        scope = "module level" if self.module_level else "lazy"
        if self.type_only:
            scope += ", TYPE_CHECKING"
        return f"{what}  [{self.path}:{self.line}, {scope}]"


# --- reading the imports ---------------------------------------------------------------------------------------


def module_name(path: Path, src: Path = SRC) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def resolve(name: str, known: set[str]) -> str:
    """The longest known module that `name` is or lies in (`phalanx.sim.Simulator` -> `phalanx.sim`)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return candidate
    return name


def absolute(module: str | None, level: int, importer: str, is_package: bool) -> str:
    """The absolute module of `from <.. module> import ...` written in `importer`."""
    if level == 0:
        return module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def literal_module(node: ast.expr) -> str | None:
    """A module name spelled as a literal: "phalanx.x", or the fixed prefix of f"phalanx.tasks.{name}"."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value.rsplit(".", 1)[0] if "." in first.value else first.value
    return None


def is_import_module_call(node: ast.Call) -> bool:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in {"import_module", "__import__"} and bool(node.args)


def parse_imports(source: str, importer: str, path: str, known: set[str], is_package: bool = False) -> list[Import]:
    """Every import of a `PACKAGE` module in `source` (the text of module `importer`)."""
    found: list[Import] = []

    def add(target: str, name: str | None, line: int, module_level: bool, type_only: bool) -> None:
        if target == PACKAGE or target.startswith(f"{PACKAGE}."):
            imported = resolve(target, known)
            found.append(Import(importer, imported, name, path, line, module_level, type_only))

    def visit(node: ast.AST, module_level: bool, type_only: bool) -> None:
        if isinstance(node, ast.If) and is_type_checking(node.test):
            for child in node.body:
                visit(child, module_level, True)
            for child in node.orelse:
                visit(child, module_level, type_only)
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            module_level = False
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, None, node.lineno, module_level, type_only)
        elif isinstance(node, ast.ImportFrom):
            base = absolute(node.module, node.level, importer, is_package)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                add(submodule if submodule in known else base, alias.name, node.lineno, module_level, type_only)
        elif isinstance(node, ast.Call) and is_import_module_call(node):
            argument = node.args[0]
            if isinstance(argument, ast.Subscript) and isinstance(argument.value, ast.Name):
                targets = tables.get(argument.value.id, [])  # import_module(ADAPTERS[trainer]): any of them
            else:
                targets = [literal_module(argument)]
            for target in targets:
                if target is not None:
                    add(target, None, node.lineno, module_level, type_only)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            if any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets):
                for value in node.value.values:  # loaded by module __getattr__: lazy
                    target = literal_module(value) if value is not None else None
                    if target is not None:
                        add(target, None, value.lineno, False, type_only)
        for child in ast.iter_child_nodes(node):
            visit(child, module_level, type_only)

    tree = ast.parse(source, filename=path)
    tables = {  # module-level NAME = {key: "module", ...}: what `import_module(NAME[key])` may import
        target.id: [literal_module(v) for v in node.value.values if v is not None]
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    visit(tree, True, False)
    return found


@functools.cache
def package_imports() -> tuple[tuple[str, ...], tuple[Import, ...]]:
    """(every module of the package, every import of a package module in it)."""
    files = sorted((SRC / PACKAGE).rglob("*.py"))
    known = {module_name(file) for file in files}
    imports: list[Import] = []
    for file in files:
        rel = str(file.relative_to(ROOT))
        is_package = file.name == "__init__.py"
        imports += parse_imports(file.read_text(), module_name(file), rel, known, is_package)
    return tuple(sorted(known)), tuple(imports)


# --- the rules ---------------------------------------------------------------------------------------------------


def part_of(module: str) -> str:
    """The top-level subpackage (or top-level module) of the package that `module` belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def runtime(imports: Iterable[Import]) -> list[Import]:
    return [i for i in imports if not i.type_only]


def find_cycles(imports: Iterable[Import]) -> list[list[Import]]:
    """For each group of modules that import each other in a circle (a strongly connected component of the
    module-level import graph), every import inside the group, example cycle first."""
    edges: dict[str, list[Import]] = {}
    for i in imports:
        if i.module_level and not i.type_only:
            edges.setdefault(i.importer, []).append(i)

    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def connect(node: str) -> None:  # Tarjan
        index[node] = low[node] = len(index)
        stack.append(node)
        for edge in edges.get(node, []):
            target = edge.imported
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            self_loop = any(e.imported == node for e in edges.get(node, []))
            if len(group) > 1 or self_loop:
                groups.append(group)

    for node in sorted(edges):
        if node not in index:
            connect(node)

    cycles = []
    for group in groups:
        inside = sorted((e for m in group for e in edges[m] if e.imported in group), key=lambda e: (e.importer, e.line))
        example = shortest_cycle(min(group), inside)
        cycles.append(example + [e for e in inside if e not in example])
    return sorted(cycles, key=lambda c: c[0].importer)


def shortest_cycle(start: str, edges: list[Import]) -> list[Import]:
    """The shortest chain of `edges` from `start` back to `start` (breadth first)."""
    paths: dict[str, list[Import]] = {start: []}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for edge in (e for e in edges if e.importer == node):
                if edge.imported == start:
                    return [*paths[node], edge]
                if edge.imported not in paths:
                    paths[edge.imported] = [*paths[node], edge]
                    following.append(edge.imported)
        frontier = following
    return []


def layer_violations(imports: Iterable[Import]) -> list[Import]:
    """Imports that can run and point from a layer up to a higher one."""
    return [
        i
        for i in runtime(imports)
        if i.importer not in EXEMPT
        and i.imported not in EXEMPT
        and LAYERS.get(part_of(i.importer), -1) < LAYERS.get(part_of(i.imported), -1)
    ]


def rule_violations(imports: Iterable[Import], importers: frozenset[str], forbidden: frozenset[str]) -> list[Import]:
    return [i for i in runtime(imports) if part_of(i.importer) in importers and part_of(i.imported) in forbidden]


def package_cycles(imports: Iterable[Import], allowed: frozenset[tuple[str, str]] = PLUGIN_LOADS) -> list[list[Import]]:
    """Cycles between top-level subpackages among the imports that can run (module level and lazy), but
    `allowed` (importer, imported) pairs: each cycle as the imports between its subpackages."""
    between = [
        Import(part_of(i.importer), part_of(i.imported), i.name, i.path, i.line, True, False)
        for i in runtime(imports)
        if i.importer not in EXEMPT
        and i.imported not in EXEMPT
        and part_of(i.importer) != part_of(i.imported)
        and (i.importer, i.imported) not in allowed
    ]
    cycles = find_cycles(between)
    originals = {(i.path, i.line, i.imported): i for i in runtime(imports)}
    by_line = {
        (i.path, i.line): [o for o in originals.values() if (o.path, o.line) == (i.path, i.line)] for i in between
    }
    return [
        [o for e in cycle for o in by_line[(e.path, e.line)] if part_of(o.imported) == e.imported] for cycle in cycles
    ]


def composition_violations(imports: Iterable[Import]) -> dict[str, tuple[list[Import], list[Import]]]:
    """Subpackages outside `COMPOSERS` that import both an env side (envs, the registry) and a learner side
    (rl beyond `RL_CONFIG`, wrappers): subpackage -> (its env imports, its learner imports)."""
    envs: dict[str, list[Import]] = {}
    learners: dict[str, list[Import]] = {}
    for i in runtime(imports):
        part = part_of(i.importer)
        if part in COMPOSERS or i.importer in EXEMPT or part_of(i.imported) == part:
            continue
        if part_of(i.imported) == "envs" or i.imported == "phalanx.training.registry":
            envs.setdefault(part, []).append(i)
        if (part_of(i.imported) == "rl" and i.imported not in RL_CONFIG) or part_of(i.imported) == "wrappers":
            learners.setdefault(part, []).append(i)
    return {part: (envs[part], learners[part]) for part in sorted(envs.keys() & learners.keys())}


def private_violations(imports: Iterable[Import]) -> list[Import]:
    """`from X import _name` where X lies in another top-level subpackage than the importer."""
    return [
        i
        for i in imports
        if i.name is not None
        and i.name.startswith("_")
        and not (i.name.startswith("__") and i.name.endswith("__"))
        and part_of(i.importer) != part_of(i.imported)
    ]


def report(title: str, imports: Iterable[Import]) -> str:
    return "\n".join([title, *(f"  {i}" for i in imports)])


# --- the checks on phalanx -------------------------------------------------------------------------------------


def test_every_module_has_a_layer():
    modules, _ = package_imports()
    unplaced = [m for m in modules if m not in EXEMPT and part_of(m) not in LAYERS]
    assert not unplaced, f"modules with no layer: add their subpackage to LAYERS in {__file__}: {unplaced}"


@pytest.mark.parametrize(
    ("find", "among", "where"),
    [(find_cycles, lambda m: m, "at module level"), (package_cycles, part_of, "between packages (lazy imports count)")],
    ids=["modules", "packages"],
)
def test_no_import_cycles(find, among, where: str):
    _, imports = package_imports()
    cycles = find(imports)
    message = "\n".join(
        report(f"cycle among {sorted({among(e.importer) for e in cycle})} (example cycle first):", cycle)
        for cycle in cycles
    )
    assert not cycles, f"{len(cycles)} import cycle(s) {where}:\n{message}"


def test_only_training_and_the_commands_compose_an_env_with_a_learner():
    _, imports = package_imports()
    bad = composition_violations(imports)
    lines = [
        report(f"{part} imports an env side and a learner side:", [*envs[:3], *learners[:3]])
        for part, (envs, learners) in bad.items()
    ]
    assert not bad, "\n".join(lines)


def test_no_back_arrows_between_layers():
    _, imports = package_imports()
    bad = layer_violations(imports)
    lines = [f"  {i}   (layer {LAYERS[part_of(i.importer)]} -> {LAYERS[part_of(i.imported)]})" for i in bad]
    assert not bad, "imports from a lower layer up to a higher one (see LAYERS):\n" + "\n".join(lines)


@pytest.mark.parametrize(("importers", "forbidden", "why"), NAMED_RULES, ids=[rule[2] for rule in NAMED_RULES])
def test_named_rule(importers, forbidden, why):
    _, imports = package_imports()
    bad = rule_violations(imports, importers, forbidden)
    assert not bad, report(f"broken rule: {why}:", bad)


LEARNER = ("phalanx.training.trainer", "phalanx.rl.ppo", "phalanx.rl.storage", "phalanx.rl.models", "phalanx.rl.losses")
LEARNER += ("phalanx.rl.normalizer", "phalanx.rl.rollout_graphs", "phalanx.training.episode_stats")
LEARNER += (
    "phalanx.training.off_policy",
    "phalanx.rl.td3",
    "phalanx.rl.sac",
    "phalanx.rl.critics",
    "phalanx.rl.replay",
)
LEARNER += ("phalanx.rl.off_policy_learner",)


def test_the_learner_sees_envs_only_through_the_vec_env_contract():
    """rsl_rl's runner depends only on its VecEnv: so do the trainer and PPO (config data aside)."""
    _, imports = package_imports()
    bad = [
        i for i in imports
        if i.importer in LEARNER and part_of(i.imported) == "envs" and i.imported != "phalanx.core.vec_env"
    ]  # fmt: skip
    assert not bad, report("the learner imports envs beyond phalanx.core.vec_env:", bad)


def test_no_private_names_across_subpackages():
    _, imports = package_imports()
    bad = private_violations(imports)
    assert not bad, report("private names imported from another subpackage (make them public or move them):", bad)


# --- the checker itself, on made-up imports: each rule must be able to fail --------------------------------------


def fake(importer: str, imported: str, name: str | None = None, module_level: bool = True, type_only: bool = False):
    return Import(importer, imported, name, "fake.py", 1, module_level, type_only)


def test_checker_finds_cycles_only_at_module_level_and_at_run_time():
    circle = [fake("phalanx.a", "phalanx.b"), fake("phalanx.b", "phalanx.c"), fake("phalanx.c", "phalanx.a")]
    cycles = find_cycles([*circle, fake("phalanx.c", "phalanx.d")])
    assert [sorted(map(str, c)) for c in cycles] == [sorted(map(str, circle))]
    assert find_cycles([fake("phalanx.x", "phalanx.x")]) != []
    assert find_cycles([fake("phalanx.a", "phalanx.b"), fake("phalanx.b", "phalanx.a", module_level=False)]) == []
    assert find_cycles([fake("phalanx.a", "phalanx.b"), fake("phalanx.b", "phalanx.a", type_only=True)]) == []


def test_checker_finds_back_arrows_and_named_rules():
    up = fake("phalanx.envs.cfg", "phalanx.rl.cfg", module_level=False)
    down = fake("phalanx.rl.cfg", "phalanx.envs.cfg")
    typing_only = fake("phalanx.sim.model", "phalanx.envs.task_env", type_only=True)
    root = fake("phalanx.sim.model", "phalanx")
    assert layer_violations([up, down, typing_only, root]) == [up]
    sideways = fake("phalanx.envs.task_env", "phalanx.dist.context")
    assert layer_violations([sideways]) == []
    assert rule_violations([sideways, down], *NAMED_RULES[0][:2]) == [sideways]
    tasks = fake("phalanx.rl.ppo", "phalanx.tasks.cartpole", module_level=False)
    below_training = next(rule for rule in NAMED_RULES if rule[0] == BELOW_TRAINING)
    assert rule_violations([tasks], *below_training[:2]) == [tasks]
    task_env = fake("phalanx.wrappers.sb3", "phalanx.envs.task_env")
    vec_env = fake("phalanx.wrappers.sb3", "phalanx.core.vec_env")
    wrappers = next(rule for rule in NAMED_RULES if rule[0] == {"wrappers"})
    assert rule_violations([task_env, vec_env], *wrappers[:2]) == [task_env]


def test_checker_finds_cycles_between_packages_with_lazy_imports():
    circle = [
        fake("phalanx.flags", "phalanx.training.registry", module_level=False),
        fake("phalanx.training.run", "phalanx.viewer.address", module_level=False),
        fake("phalanx.viewer.command", "phalanx.flags"),
    ]
    assert [sorted(map(str, c)) for c in package_cycles(circle)] == [sorted(map(str, circle))]
    typing_only = fake("phalanx.wrappers.sb3", "phalanx.training.cfg", type_only=True)
    assert package_cycles([fake("phalanx.training.libraries", "phalanx.wrappers.sb3"), typing_only]) == []
    loads = [fake("phalanx.training.registry", "phalanx.tasks", module_level=False)]
    loads.append(fake("phalanx.tasks.cartpole", "phalanx.training.registry"))
    assert package_cycles(loads) == [] and package_cycles(loads, frozenset()) != []


def test_checker_finds_packages_that_compose_an_env_with_a_learner():
    env = fake("phalanx.wrappers.sb3", "phalanx.envs.task_env")
    learner = fake("phalanx.wrappers.sb3", "phalanx.rl.models")
    assert composition_violations([env, learner]) == {"wrappers": ([env], [learner])}
    config = fake("phalanx.tasks.cartpole", "phalanx.rl.cfg")
    registry = fake("phalanx.tasks.cartpole", "phalanx.training.registry")
    composer = [fake("phalanx.training.run", "phalanx.envs.cfg"), fake("phalanx.training.run", "phalanx.rl.ppo")]
    assert composition_violations([config, registry, *composer]) == {}


def test_checker_finds_private_names_across_subpackages():
    across = fake("phalanx.bench.command", "phalanx.cli", name="_task_and_flags")
    within = fake("phalanx.envs.mdp.rewards", "phalanx.envs.mdp.observations", name="_heading_proj")
    public = fake("phalanx.bench.command", "phalanx.flags", name="task_and_flags")
    dunder = fake("phalanx.bench.machine", "phalanx", name="__version__")
    assert private_violations([across, within, public, dunder]) == [across]


def test_parser_reads_scopes_type_checking_relative_and_lazy_imports():
    known = {"phalanx", "phalanx.envs", "phalanx.envs.cfg", "phalanx.envs.mdp", "phalanx.envs.mdp.state"}
    known |= {"phalanx.rl", "phalanx.rl.ppo", "phalanx.tasks", "phalanx.sim", "phalanx.sim.model"}
    source = "\n".join(
        [
            "from typing import TYPE_CHECKING",
            "import importlib",
            "from . import state",  # 3
            "from ..cfg import _private",  # 4
            "try:",
            "    import phalanx.rl.ppo",  # 6
            "except ImportError:",
            "    pass",
            "if TYPE_CHECKING:",
            "    from phalanx.sim.model import Model",  # 10
            "def f(module):",
            "    from phalanx.sim import Simulator",  # 12
            "    importlib.import_module(f'phalanx.tasks.{module}')",  # 13
            "_LAZY = {'X': 'phalanx.sim.model'}",  # 14
            "ADAPTERS = {'ppo': 'phalanx.rl.ppo', 'n': 3}",
            "RENAMED = {'old': 'phalanx.sim'}",  # a table no import_module reads from
            "def g(name):",
            "    return importlib.import_module(ADAPTERS[name])",  # 18
        ]
    )
    found = parse_imports(source, "phalanx.envs.mdp.rewards", "rewards.py", known)
    got = {(i.line, i.imported, i.name, i.module_level, i.type_only) for i in found}
    assert got == {
        (3, "phalanx.envs.mdp.state", "state", True, False),
        (4, "phalanx.envs.cfg", "_private", True, False),
        (6, "phalanx.rl.ppo", None, True, False),
        (10, "phalanx.sim.model", "Model", True, True),
        (12, "phalanx.sim", "Simulator", False, False),
        (13, "phalanx.tasks", None, False, False),
        (14, "phalanx.sim.model", None, False, False),
        (18, "phalanx.rl.ppo", None, False, False),
    }
    # The same text in a package's __init__ resolves `.` to the package itself.
    in_init = parse_imports("from .mdp import state", "phalanx.envs", "__init__.py", known, is_package=True)
    assert [i.imported for i in in_init] == ["phalanx.envs.mdp.state"]
