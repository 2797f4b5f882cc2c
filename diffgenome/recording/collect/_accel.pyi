"""Type stub of the compiled core (``_accel.c``); see tracer.py for what it accelerates."""

from collections.abc import Callable
from typing import Any

ABI: int
VERSION: int

class Core:
    recording: bool
    def __init__(
        self,
        tracer: object,
        codes: dict[int, Any],
        active: dict[int, Any],
        task_frames: dict[int, Any],
        on_start: Callable[..., Any],
        on_resume: Callable[..., Any],
        on_branch: Callable[..., Any],
        record_state: Callable[..., None],
        summarize: Callable[[object], tuple[str, bytes | None]],
        none_summary: tuple[str, bytes | None],
        disable: object,
        node_type: type,
        info_type: type,
        bounded_type: type,
        blake2b: Callable[..., Any],
        str_markers: tuple[str, ...],
        tempfile_names: set[str],
        tempfile_name_bits: bytearray,
        never: int,
    ) -> None: ...
    def on_start(self, code: Any, offset: int) -> Any: ...
    def on_resume(self, code: Any, offset: int, *rest: object) -> Any: ...
    def on_return(self, code: Any, offset: int, value: object) -> Any: ...
    def on_yield(self, code: Any, offset: int, value: object) -> Any: ...
    def on_branch(self, code: Any, src: int, dest: int) -> Any: ...
    def summarize(self, value: object) -> tuple[str, bytes | None]: ...
    def add_pair(self, bounded: object, pair: tuple[str, bytes | None]) -> None: ...
