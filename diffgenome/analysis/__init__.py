"""The analysis side: protocol models, store reader, differ, reports and the CLI.

Free to use pydantic and rich; never imported by the recording side.
"""
