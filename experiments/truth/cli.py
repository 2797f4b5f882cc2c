"""Command line of experiments/truth.py."""

from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="truth.py", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("stability", help="record each project twice, diff the two runs")
    p.add_argument("--projects", default="cookiecutter,google-auth")
    p.add_argument("--basetemp", action="store_true", help="same --basetemp for both runs")
    p = sub.add_parser("census", help="count stand-ins of one run per project")
    p.add_argument("--projects", default="cookiecutter,google-auth,google-api-core")
    p = sub.add_parser("mutants", help="mutate one project, record and diff each mutant")
    p.add_argument("--project", default="more-itertools")
    p.add_argument("--limit", type=int, default=60)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--seed", type=int, default=5)
    p.add_argument(
        "--module-level",
        action="store_true",
        help="only mutants of module-level code (diffgenome affected's module-level rule)",
    )
    p.add_argument(
        "--via-revisions",
        action="store_true",
        help="each mutant a commit, diffed as revisions with and without confirmation (#11.6)",
    )
    p.add_argument("--tag", default="", help="suffix of the result files (e.g. s10-after)")
    p.add_argument(
        "--selective",
        action="store_true",
        help="each mutant a commit, diffed whole and with diff --selective (#48.1)",
    )
    sub.add_parser("report", help="write experiments/results/truth-DATE.{md,json}")
    p = sub.add_parser("identical", help="diff a commit against a new commit of the same tree")
    p.add_argument("--projects", default="cookiecutter,attrs,more-itertools")
    p.add_argument("--quick", action="store_true", help="the benchmark's quick selections")
    p.add_argument(
        "--reuse-worktree",
        action="store_true",
        help="then the same diff reused, and HEAD WORKTREE after a comment-only edit (#29)",
    )
    p.add_argument(
        "--pytest-arg",
        action="append",
        default=[],
        help="a control, e.g. --pytest-arg=--hypothesis-seed=0 (repeatable; use with --tag)",
    )
    p.add_argument(
        "--env",
        action="append",
        default=[],
        help="a control, e.g. --env PYTHONHASHSEED=0 (repeatable; use with --tag)",
    )
    p.add_argument(
        "--diff-arg",
        action="append",
        default=[],
        help="an option of diffgenome diff, e.g. --diff-arg=--no-confirm (use with --tag)",
    )
    p.add_argument("--tag", default="", help="suffix of the result files (e.g. after-merge)")
    p = sub.add_parser("releases", help="diff two consecutive releases of real projects")
    p.add_argument("--projects", default="cachetools,semver,humanize")
    p.add_argument("--tag", default="", help="suffix of the result files (e.g. after-merge)")
    p = sub.add_parser(
        "ways", help="an identical tree four ways (fresh, reused, WORKTREE, ignored)"
    )
    p.add_argument("--projects", default="boltons,isodate")
    p.add_argument("--tag", default="")
    p = sub.add_parser("verdicts", help="re-apply truth/verdicts.py to the releases results")
    p.add_argument("--tag", default="")
    args = parser.parse_args(argv)
    if args.command == "stability":
        from truth import stability

        stability.run(args.projects.split(","), basetemp=args.basetemp)
    elif args.command == "census":
        from truth import census

        census.run(args.projects.split(","))
    elif args.command == "mutants" and args.selective:
        from truth import selective

        selective.run(args.project, limit=args.limit, seed=args.seed, tag=args.tag)
    elif args.command == "mutants" and args.via_revisions:
        from truth import mutants_revisions

        mutants_revisions.run(args.project, limit=args.limit, seed=args.seed, tag=args.tag)
    elif args.command == "mutants":
        from truth import mutants

        mutants.run(
            args.project,
            limit=args.limit,
            jobs=args.jobs,
            seed=args.seed,
            module_level=args.module_level,
            tag=args.tag,
        )
    elif args.command == "identical":
        from truth import identical

        identical.run(
            args.projects.split(","),
            quick=args.quick,
            tag=args.tag,
            extra_args=args.pytest_arg,
            extra_env=dict(item.split("=", 1) for item in args.env),
            diff_args=args.diff_arg,
            reuse_worktree=args.reuse_worktree,
        )
    elif args.command == "releases":
        from truth import releases

        releases.run(args.projects.split(","), tag=args.tag)
    elif args.command == "ways":
        from truth import ways

        ways.run(args.projects.split(","), tag=args.tag)
    elif args.command == "verdicts":
        from truth import releases

        releases.reclassify(args.tag)
    else:
        from truth import report

        report.run()
    return 0
