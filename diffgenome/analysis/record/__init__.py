"""The sides of ``diffgenome diff`` and ``affected``: git, disposable worktrees, the target
interpreter, and recording each side with ``pytest --genome`` in a subprocess.

Kept apart from :mod:`diffgenome.analysis.diff`, which only compares documents it is given,
and from the reports: the differ can be tested, and reused on saved recordings, without git
or child processes, and nothing here knows what becomes of a side.
:mod:`diffgenome.analysis.pipeline` joins the two.
"""
