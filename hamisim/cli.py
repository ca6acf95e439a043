"""The ``hamisim`` command.

Every subcommand reports bad input as ``file:line: problem`` on stderr and
exits with status 2, never with a traceback.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from . import __version__
from .errors import HamisimError, InputError
from .scheduler import BACKENDS

EXIT_OK, EXIT_EXPECTATION_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def _add_backend(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=BACKENDS, default="kernel",
                   help="placement engine: the compiled kernel (default) or the readable "
                        "pure-Python reference; both take identical decisions")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hamisim",
        description="Simulate HAMi GPU scheduling (v2.10 semantics) on Kubernetes clusters.",
        epilog="Bad input exits with status 2 and a 'file:line: problem' message.",
    )
    parser.add_argument("--version", action="version", version=f"hamisim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    sc = sub.add_parser(
        "scenario", help="run a step-by-step scenario file (create / delete / expect)",
        description="Run a scenario file (DESIGN §4.3): create pods, delete pods, check "
                    "where they landed. Prints one row per scheduling event; exits 1 when "
                    "an expectation fails, 2 on bad input.",
        epilog="FILE may also name a bundled scenario, e.g. 'mutex-exp1' "
               "(see 'hamisim scenario --list').")
    sc.add_argument("file", metavar="FILE", nargs="?",
                    help="scenario file (.yaml/.yml/.json) or a bundled scenario name")
    sc.add_argument("--json", action="store_true",
                    help="print the events and expectations as one JSON object")
    sc.add_argument("--list", action="store_true", help="list the bundled scenarios and exit")
    _add_backend(sc)
    sc.set_defaults(func=cmd_scenario)
    return parser


def cmd_scenario(args: argparse.Namespace) -> int:
    from .bundled import bundled_scenarios, resolve_scenario
    from .scenario import format_table, load_scenario, run_scenario

    if args.list:
        for name, path in bundled_scenarios().items():
            print(f"{name:28s} {path}")
        return EXIT_OK
    if not args.file:
        raise InputError(None, None, "hamisim scenario: FILE is required (or --list)")
    scenario = load_scenario(str(resolve_scenario(args.file)))
    result = run_scenario(scenario, backend=args.backend)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_table(result))
    return EXIT_OK if result.ok else EXIT_EXPECTATION_FAILED


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InputError as err:
        print(f"hamisim: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except HamisimError as err:
        print(f"hamisim: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("hamisim: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
