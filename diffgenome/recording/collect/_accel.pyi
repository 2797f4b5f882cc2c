"""Type stub of the compiled core (``_accel.c``); see tracer.py for what it accelerates and
contract.py for the encodings it is handed."""

from collections.abc import Callable
from types import FrameType
from typing import Any

ABI: int
VERSION: int

def frame_var(frame: FrameType, name: str, /) -> Any: ...

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
        disable: object,
        node_type: type,
        info_type: type,
        bounded_type: type,
        blake2b: Callable[..., Any],
        str_markers: tuple[str, ...],
        tempfile_names: set[str],
        tempfile_name_bits: bytearray,
        on_error: Callable[[BaseException], None] | None,
        *,
        node_call: int,
        state_entry: str,
        state_exit: str,
        arg_shape_separator: str,
        arg_canon_separator: bytes,
        branch_key_shift: int,
        no_decision: int,
        small_int: int,
        short_str: int,
        overflow_tags: tuple[bytes, bytes],
        overflow_digest_size: int,
        none_summary: tuple[str, bytes | None],
        tempfile_name_hash: tuple[int, int, int],
        value_bounds: tuple[int, int, int, int, tuple[int, int], int],
        frame_get_var: bool = False,
        class_tables: tuple[dict[int, Any], dict[int, Any], dict[int, Any], list[int]],
        state_type: type,
        state_limit: int,
        bucket: Callable[[object], str],
        enum_type: type,
    ) -> None: ...
    def on_start(self, code: Any, offset: int) -> Any: ...
    def on_resume(self, code: Any, offset: int, *rest: object) -> Any: ...
    def on_return(self, code: Any, offset: int, value: object) -> Any: ...
    def on_yield(self, code: Any, offset: int, value: object) -> Any: ...
    def on_branch(self, code: Any, src: int, dest: int) -> Any: ...
    def forget_classes(self) -> None: ...
    def bucket(self, value: object) -> str: ...
    def instance_dict(self, value: object) -> object: ...
    def summarize(self, value: object) -> tuple[str, bytes | None]: ...
    def add_pair(self, bounded: object, pair: tuple[str, bytes | None]) -> None: ...
    def add_values(
        self,
        bounded: object,
        labels: tuple[str, ...] | None,
        values: tuple[object, ...],
        shape_only: bool,
    ) -> bool: ...

def frame_key(frame: FrameType, /) -> int: ...
def frame_probe(
    names: tuple[str, ...], /
) -> tuple[int, int | None, Any, tuple[tuple[object] | None, ...]] | None: ...
