"""The analysis side: protocol models, recording the sides, the differ, reports and the CLI.

Free to use pydantic and rich; never imported by the recording side.
"""
