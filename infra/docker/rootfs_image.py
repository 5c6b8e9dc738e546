"""Build infra/docker/Dockerfile's image without a Docker daemon, and run it the way the chart does.

    sudo python3 infra/docker/rootfs_image.py build --out /tmp/profilerhub-image
    sudo python3 infra/docker/rootfs_image.py run /tmp/profilerhub-image --read-only \\
        --tmpfs /tmp --tmpfs /var/lib/profilerhub -- version

``build`` reads the Dockerfile and carries out its instructions itself, so the image follows the
Dockerfile as it is edited, with no second description of it to keep in step:

1. ``FROM python:3.11-slim-bookworm`` is emulated by a root filesystem made with
   ``debootstrap --variant=minbase bookworm`` plus Debian's ``python3`` (3.11, in ``/usr``; the
   official image has its own CPython in ``/usr/local``), ``python3-venv``, ``python3-pip``,
   ``python-is-python3`` and ``ca-certificates``, slimmed as Debian's container images are (no
   docs, man pages, locales or apt lists) and without Debian's ``EXTERNALLY-MANAGED`` marker, so
   ``pip install`` behaves as in the official image. It is made once and kept in ``--cache``.
2. Every stage starts from a copy of that root filesystem; ``RUN`` runs ``/bin/sh -c`` in a chroot
   (with ``/proc``, ``/dev``, the host's ``resolv.conf`` and CA certificates for pip) under the
   stage's ``ENV``, ``WORKDIR`` and ``USER``; ``COPY`` takes from the build context (the repository, through
   ``.dockerignore``) or, with ``--from``, from an earlier stage; files are owned by root as
   Docker makes them.
3. The last stage is packed as one layer (sorted entries, numeric owners, gzip without a
   timestamp; file times kept as they are, since each ``.pyc`` records its source's mtime and a
   clamped one would make every one stale, recompiled at each start on a read-only root; the
   config's ``created`` is ``SOURCE_DATE_EPOCH``, default: the last commit's time) into an OCI
   image layout: ``oci-layout``, ``index.json``, the manifest, the config (the stage's Env, User,
   WorkingDir, Entrypoint, Cmd, ExposedPorts and Labels) and, for ``docker load``'s older
   reader, Docker's ``manifest.json``. The layout is written as ``<out>/oci`` and as the tarball
   ``<out>/profilerhub-oci.tar`` that ``docker load``, ``podman load`` and
   ``skopeo copy oci-archive:...`` take; the final root filesystem stays in ``<out>/rootfs``.

``run`` starts the image's entry point in that root filesystem as the image's user, with only the
image's environment, optionally on a read-only root with tmpfs mounts or host folders bound in (the
chart mounts emptyDirs on ``/tmp`` and ``/var/lib/profilerhub`` under ``readOnlyRootFilesystem``).
It shares the host's network; it is a check, not a container runtime.

Needs root, debootstrap and network access to Debian's mirror and PyPI; Python's standard library
only. Both commands re-run themselves in a private mount namespace (``unshare``), so no mount
outlives them.
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any


def _beside(name: str) -> ModuleType:
    """The module ``name.py`` next to this script (a script, and loaded by path in the tests: no package)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_oci = _beside("oci_layout")
pack, read_config, tar_layout = _oci.pack, _oci.read_config, _oci.tar_layout

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "infra" / "docker" / "Dockerfile"

# The one base image the emulation stands in for, and what it adds to a stage's environment
# (Debian's default PATH, which already holds /usr/local/bin, and the official image's LANG).
BASE_IMAGE = "python:3.11-slim-bookworm"
BASE_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
DEBIAN_MIRROR = "http://deb.debian.org/debian"
DEBIAN_SUITE = "bookworm"
DEBIAN_PACKAGES = ["ca-certificates", "python3", "python3-venv", "python3-pip", "python-is-python3"]
# What Debian's own container images leave out (debuerreotype's "slimify"), copyright files kept.
SLIM_PATHS = [
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "usr/share/lintian",
    "var/lib/apt/lists",
    "var/cache/apt",
    "var/log",
]
HOST_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


# --- the Dockerfile ---------------------------------------------------------------------------


@dataclasses.dataclass
class Stage:
    """One ``FROM`` and the instructions under it, ``(INSTRUCTION, arguments)`` in order."""

    base: str
    name: str | None
    steps: list[tuple[str, str]]


def read_dockerfile(text: str, build_args: dict[str, str] | None = None) -> list[Stage]:
    """The stages of a Dockerfile: continuation lines joined, comments and directives dropped,
    ``${ARG}`` of the global ``ARG``s (or ``build_args``) substituted in ``FROM``."""
    global_args = dict(build_args or {})
    stages: list[Stage] = []
    for line in text.replace("\\\n", " ").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        word, rest = word.upper(), rest.strip()
        if word == "ARG" and not stages:
            name, _, default = rest.partition("=")
            global_args.setdefault(name, default)
        elif word == "FROM":
            base, *alias = substitute(rest, global_args).split()
            stages.append(Stage(base, alias[1] if alias[:1] == ["AS"] or alias[:1] == ["as"] else None, []))
        elif not stages:
            raise ValueError(f"{word} before the first FROM")
        else:
            stages[-1].steps.append((word, rest))
    return stages


def substitute(text: str, env: dict[str, str]) -> str:
    """Docker's ``$NAME`` / ``${NAME}`` substitution (unset names become empty)."""
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: env.get(m.group(1) or m.group(2), ""), text)


def key_values(rest: str, env: dict[str, str]) -> dict[str, str]:
    """The pairs of an ``ENV`` or ``LABEL`` (``k=v k2="v 2"``, or the legacy ``ENV k v``)."""
    words = shlex.split(rest)
    if "=" not in words[0]:
        return {words[0]: substitute(rest.split(None, 1)[1], env)}
    return {key: substitute(value, env) for key, _, value in (w.partition("=") for w in words)}


def exec_form(rest: str) -> list[str]:
    """``ENTRYPOINT``/``CMD`` arguments: the JSON form as is, the shell form under ``/bin/sh -c``."""
    return json.loads(rest) if rest.startswith("[") else ["/bin/sh", "-c", rest]


def image_config(stage: Stage, base_env: dict[str, str] = BASE_ENV) -> dict[str, Any]:
    """The OCI image config's ``config`` object that ``docker build`` gives this stage's image."""
    env, labels = dict(base_env), {}
    ports: dict[str, dict[str, str]] = {}
    config: dict[str, Any] = {}
    workdir = "/"
    for word, rest in stage.steps:
        if word == "ENV":
            env.update(key_values(rest, env))
        elif word == "LABEL":
            labels.update(key_values(rest, env))
        elif word == "EXPOSE":
            ports.update({p if "/" in p else f"{p}/tcp": {} for p in substitute(rest, env).split()})
        elif word == "WORKDIR":
            workdir = os.path.join(workdir, substitute(rest, env))
        elif word == "USER":
            config["User"] = substitute(rest, env)
        elif word == "ENTRYPOINT":
            config["Entrypoint"] = exec_form(rest)
            config.pop("Cmd", None)  # as Docker does: a new entry point resets an inherited CMD
        elif word == "CMD":
            config["Cmd"] = exec_form(rest)
    config.update(Env=[f"{k}={v}" for k, v in env.items()], WorkingDir=workdir)
    if ports:
        config["ExposedPorts"] = ports
    if labels:
        config["Labels"] = labels
    return config


# --- the build ----------------------------------------------------------------------------------


def run_logged(command: list[str], **kwargs: Any) -> None:
    print("+", shlex.join(command), flush=True)
    subprocess.run(command, check=True, **kwargs)


def base_rootfs(cache: Path) -> Path:
    """The stand-in for ``python:3.11-slim-bookworm``, made once into ``cache``."""
    base = cache / "base"
    if (base / ".profilerhub-base").exists():
        return base
    shutil.rmtree(cache / "base.tmp", ignore_errors=True)
    cache.mkdir(parents=True, exist_ok=True)
    run_logged(
        [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(DEBIAN_PACKAGES)}",
            DEBIAN_SUITE,
            str(cache / "base.tmp"),
            DEBIAN_MIRROR,
        ]
    )
    tmp = cache / "base.tmp"
    for marker in tmp.glob("usr/lib/python3*/EXTERNALLY-MANAGED"):
        marker.unlink()
    for relative in SLIM_PATHS:
        folder = str(tmp / relative)
        subprocess.run(
            ["find", folder, "-mindepth", "1", "!", "-type", "d", "!", "-name", "copyright", "-delete"],
            check=True,
        )
        subprocess.run(["find", folder, "-mindepth", "1", "-type", "d", "-empty", "-delete"], check=True)
    (tmp / ".profilerhub-base").touch()
    tmp.rename(base)
    return base


def dockerignore(context: Path) -> Callable[[str], bool]:
    """Whether ``.dockerignore`` keeps a path (relative, with ``/``) out of the build context:
    the last pattern matching the path or a folder above it decides, ``!`` keeps."""
    rules = []
    ignore = context / ".dockerignore"
    for line in ignore.read_text().splitlines() if ignore.exists() else []:
        line = line.strip()
        if line and not line.startswith("#"):
            pattern = line.lstrip("!").strip("/")
            patterns = [pattern, pattern[3:]] if pattern.startswith("**/") else [pattern]
            rules.append((line.startswith("!"), patterns))

    def excluded(relative: str) -> bool:
        parts = relative.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        verdict = False
        for keep, patterns in rules:
            if any(fnmatch.fnmatchcase(p, pattern) for p in prefixes for pattern in patterns):
                verdict = not keep
        return verdict

    return excluded


@contextmanager
def chroot_mounts(rootfs: Path) -> Iterator[None]:
    """``/proc``, ``/dev`` and the host's DNS configuration and CA certificates inside ``rootfs``
    while RUN steps run (the host's CAs: a TLS-inspecting proxy between the build and PyPI is
    trusted by the build, as by ``docker build`` on that host; the image keeps Debian's own)."""
    resolv = rootfs / "etc" / "resolv.conf"
    saved = resolv.read_bytes() if resolv.is_file() and not resolv.is_symlink() else None
    certificates = rootfs / HOST_CA_BUNDLE.lstrip("/")
    binds = [("/dev", rootfs / "dev")] + ([(HOST_CA_BUNDLE, certificates)] if certificates.is_file() else [])
    subprocess.run(["mount", "-t", "proc", "proc", str(rootfs / "proc")], check=True)
    for source, target in binds:
        subprocess.run(["mount", "--rbind", source, str(target)], check=True)
    resolv.unlink(missing_ok=True)
    shutil.copyfile("/etc/resolv.conf", resolv)
    try:
        yield
    finally:
        for _, target in reversed(binds):
            subprocess.run(["umount", "-R", str(target)], check=True)
        subprocess.run(["umount", str(rootfs / "proc")], check=True)
        resolv.unlink()
        if saved is not None:
            resolv.write_bytes(saved)


def ids(rootfs: Path, user: str) -> tuple[int, int]:
    """``USER``'s numeric uid and gid (names looked up in the image's own passwd and group)."""
    name, _, group = user.partition(":")

    def lookup(table: str, key: str) -> int:
        if key.isdigit():
            return int(key)
        for line in (rootfs / "etc" / table).read_text().splitlines():
            fields = line.split(":")
            if fields[0] == key:
                return int(fields[2])
        raise ValueError(f"USER {user}: no {key} in /etc/{table}")

    uid = lookup("passwd", name)
    if group:
        return uid, lookup("group", group)
    for line in (rootfs / "etc" / "passwd").read_text().splitlines():
        if line.split(":")[2:3] == [str(uid)]:
            return uid, int(line.split(":")[3])
    return uid, 0


def chrooted(rootfs: Path, workdir: str, user: str | None) -> Any:
    """A ``preexec_fn`` that enters ``rootfs`` at ``workdir`` as ``user``."""
    uid, gid = ids(rootfs, user) if user else (0, 0)

    def enter() -> None:
        os.chroot(rootfs)
        os.chdir(workdir)
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    return enter


def copy_into(
    sources: list[Path], base: Path, rootfs: Path, target: str, excluded: Callable[[str], bool]
) -> None:
    """``COPY``: each source file to ``target``, each source folder's contents into it, leaving out
    what ``excluded`` names (relative to ``base``); owner root, as Docker makes them."""
    destination = rootfs / target.lstrip("/")
    for source in sources:
        if source.is_dir() and not source.is_symlink():
            for directory, folders, names in os.walk(source):
                here = Path(directory)
                folders[:] = sorted(
                    f for f in folders if not excluded((here / f).relative_to(base).as_posix())
                )
                place(here, destination / here.relative_to(source))
                for name in sorted(names):
                    if not excluded((here / name).relative_to(base).as_posix()):
                        place(here / name, destination / (here / name).relative_to(source))
        else:
            place(source, destination / source.name if target.endswith("/") else destination)
    for path in [destination, *destination.rglob("*")] if destination.is_dir() else [destination]:
        os.lchown(path, 0, 0)


def place(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_symlink():
        target.unlink(missing_ok=True)
        target.symlink_to(os.readlink(source))
    elif source.is_dir():
        target.mkdir(exist_ok=True)
    else:
        shutil.copy2(source, target)


def build_stages(stages: list[Stage], context: Path, cache: Path, work: Path) -> Path:
    """Carry out every stage; the last one's root filesystem."""
    excluded = dockerignore(context)
    done: dict[str, Path] = {}
    work.mkdir(parents=True, exist_ok=True)
    rootfs = work
    for number, stage in enumerate(stages):
        rootfs = work / f"stage-{number}"
        shutil.rmtree(rootfs, ignore_errors=True)
        if stage.base in done:
            source = done[stage.base]
        elif stage.base == BASE_IMAGE:
            source = base_rootfs(cache)
        else:
            raise SystemExit(f"FROM {stage.base}: only {BASE_IMAGE} (emulated) or an earlier stage")
        run_logged(["cp", "-a", str(source), str(rootfs)])
        (rootfs / ".profilerhub-base").unlink(missing_ok=True)
        env, workdir, user = dict(BASE_ENV), "/", None
        for word, rest in stage.steps:
            print(f"[stage {number}] {word} {rest}", flush=True)
            if word == "ENV":
                env.update(key_values(rest, env))
            elif word == "WORKDIR":
                workdir = os.path.join(workdir, substitute(rest, env))
                (rootfs / workdir.lstrip("/")).mkdir(parents=True, exist_ok=True)
            elif word == "USER":
                user = substitute(rest, env)
            elif word == "RUN":
                with chroot_mounts(rootfs):
                    subprocess.run(
                        ["/bin/sh", "-c", rest],
                        env=env,
                        check=True,
                        preexec_fn=chrooted(rootfs, workdir, user),
                    )
            elif word == "COPY":
                words = rest.split()
                origin = next((w.split("=", 1)[1] for w in words if w.startswith("--from=")), None)
                *sources, target = [w for w in words if not w.startswith("--")]
                target = os.path.join(workdir, target) + ("/" if target.endswith("/") else "")
                if origin is None:
                    copy_into([context / s for s in sources], context, rootfs, target, excluded)
                else:
                    there = done[origin]
                    copy_into(
                        [there / s.lstrip("/") for s in sources], there, rootfs, target, lambda _: False
                    )
            elif word not in ("LABEL", "EXPOSE", "ENTRYPOINT", "CMD", "ARG"):
                raise SystemExit(f"{word}: not an instruction this tool carries out")
        done[stage.name or str(number)] = rootfs
    return rootfs


def largest(folder: Path, count: int) -> list[tuple[int, str]]:
    """The ``count`` biggest entries of ``folder`` by ``du`` (MiB, name)."""
    done = subprocess.run(["du", "-sm", *map(str, folder.iterdir())], capture_output=True, text=True)
    sizes = [
        (int(size), Path(name).name) for size, name in (line.split("\t") for line in done.stdout.splitlines())
    ]
    return sorted(sizes, reverse=True)[:count]


def du_mib(path: Path) -> int:
    return int(subprocess.run(["du", "-sm", str(path)], capture_output=True, text=True).stdout.split()[0])


def build(args: argparse.Namespace) -> None:
    out: Path = args.out.resolve()
    if out.is_relative_to(ROOT):
        raise SystemExit(f"--out {out}: outside the repository, please (generated output)")
    epoch = int(
        os.environ.get("SOURCE_DATE_EPOCH")
        or subprocess.run(
            ["git", "-C", str(ROOT), "log", "-1", "--format=%ct"], capture_output=True, text=True, check=True
        ).stdout
    )
    stages = read_dockerfile(DOCKERFILE.read_text(), dict(a.split("=", 1) for a in args.build_arg))
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    final = build_stages(stages, ROOT, args.cache.resolve(), out / "work")
    rootfs = out / "rootfs"
    shutil.rmtree(rootfs, ignore_errors=True)
    final.rename(rootfs)
    shutil.rmtree(out / "work")
    layout = out / "oci"
    shutil.rmtree(layout, ignore_errors=True)
    figures = pack(rootfs, image_config(stages[-1]), layout, args.tag, epoch)
    tar_layout(layout, out / "profilerhub-oci.tar", epoch)
    record = subprocess.run(
        ["chroot", str(rootfs), "dpkg-query", "-W"], capture_output=True, text=True, check=True
    )
    (out / "debian-packages.txt").write_text(record.stdout)
    venv = rootfs / "opt" / "profilerhub"
    if venv.is_dir():
        pip_list = [
            "chroot",
            str(rootfs),
            "/opt/profilerhub/bin/python",
            "-c",
            "import importlib.metadata as m; print('\\n'.join(sorted(f'{d.name}=={d.version}' "
            "for d in m.distributions())))",
        ]
        (out / "python-packages.txt").write_text(
            subprocess.run(pip_list, capture_output=True, text=True).stdout
        )
        (site,) = venv.glob("lib/python3*/site-packages")
        figures["venv_mib"] = du_mib(venv)
        figures["site_packages_largest_mib"] = largest(site, 15)
    figures.update(
        rootfs_mib=du_mib(rootfs),
        tarball_bytes=(out / "profilerhub-oci.tar").stat().st_size,
        build_seconds=round(time.monotonic() - started),
    )
    (out / "figures.json").write_text(json.dumps(figures, indent=2))
    print(json.dumps(figures, indent=2))


# --- running it ----------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Start the image's entry point with ``args.command`` in its root filesystem."""
    image: Path = args.image.resolve()
    config = read_config(image / "oci")
    rootfs = image / "rootfs"
    if args.read_only:
        subprocess.run(["mount", "--bind", str(rootfs), str(rootfs)], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", str(rootfs)], check=True)
    uid, gid = ids(rootfs, config.get("User", "0"))
    for target in args.tmpfs:
        options = f"mode=0755,uid={uid},gid={gid}" if target != "/tmp" else "mode=1777"
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(rootfs / target.lstrip("/"))], check=True
        )
    for volume in args.volume:
        source, _, target = volume.partition(":")
        subprocess.run(["mount", "--bind", source, str(rootfs / target.lstrip("/"))], check=True)
    subprocess.run(["mount", "-t", "proc", "proc", str(rootfs / "proc")], check=True)
    env = dict(e.split("=", 1) for e in config["Env"])
    env["HOME"] = next(  # as Docker does: the user's home from the image's passwd
        (
            line.split(":")[5]
            for line in (rootfs / "etc/passwd").read_text().splitlines()
            if line.split(":")[2] == str(uid)
        ),
        "/",
    )
    entrypoint = [args.entrypoint] if args.entrypoint else config.get("Entrypoint", [])
    command = entrypoint + (args.command or ([] if args.entrypoint else config.get("Cmd", [])))
    # subprocess tries each PATH folder in the child, after the chroot: the image's PATH lookup.
    done = subprocess.run(
        command,
        env=env,
        preexec_fn=chrooted(rootfs, config.get("WorkingDir") or "/", config.get("User")),
    )
    return done.returncode


def in_private_mount_namespace() -> None:
    """Re-run this command under ``unshare --mount``, so that its mounts end with it."""
    if os.environ.get("PROFILERHUB_ROOTFS_UNSHARED") != "1":
        os.environ["PROFILERHUB_ROOTFS_UNSHARED"] = "1"
        os.execvp("unshare", ["unshare", "--mount", "--propagation", "private", sys.executable, *sys.argv])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command_name", required=True)
    make = commands.add_parser("build", help="build the image into --out")
    make.add_argument("--out", type=Path, required=True, help="output folder (outside the repository)")
    make.add_argument(
        "--cache",
        type=Path,
        default=Path("/var/cache/profilerhub-rootfs"),
        help="where the base root filesystem is kept between builds",
    )
    make.add_argument("--tag", default="profilerhub:dev", help="the image's name in manifest.json/index.json")
    make.add_argument("--build-arg", action="append", default=[], help="NAME=VALUE for the Dockerfile's ARGs")
    start = commands.add_parser("run", help="run the built image's entry point: run IMAGE [options] -- ARGS")
    start.add_argument("image", type=Path, help="a `build --out` folder")
    start.add_argument("--read-only", action="store_true", help="the root filesystem read-only")
    start.add_argument("--tmpfs", action="append", default=[], help="a writable tmpfs at this path")
    start.add_argument("--entrypoint", help="a program to run instead of the image's entry point")
    start.add_argument("--volume", action="append", default=[], help="HOST_DIR:PATH, bound read-write")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    args.command = argv[split + 1 :]  # after `--`: the entry point's arguments (default: the CMD)
    if os.geteuid() != 0:
        raise SystemExit("rootfs_image.py needs root (debootstrap, chroot, mount)")
    in_private_mount_namespace()
    if args.command_name == "build":
        build(args)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
