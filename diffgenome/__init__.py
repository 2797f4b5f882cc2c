"""diffgenome: record what every test really does, and diff it between commits.

This top-level module stays empty on purpose: the recording side is imported inside the
user's test process, where only the standard library and pytest may be assumed.
"""

__version__ = "0.1.0"
# Published as pytest-diffgenome: another project on PyPI is called diffgenome and installs an
# import package of the same name. This marker tells ours apart (diffgenome.protocol.identity).
__distribution__ = "pytest-diffgenome"
