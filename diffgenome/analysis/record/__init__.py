"""Input and output of ``diffgenome diff`` and ``affected``: git, disposable worktrees, and
recording each side with ``pytest --genome`` in a subprocess.

Kept apart from :mod:`diffgenome.analysis.diff`, which only compares documents it is given:
the differ can be tested, and reused on saved recordings, without git or child processes.
"""
