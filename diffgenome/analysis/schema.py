"""JSON Schemas of the published formats, generated from the pydantic models.

The committed copies in docs/schema/ are what other tools read; a test fails when they drift
from the models, so the models stay the single source of truth.
"""

from __future__ import annotations

import json
from typing import Any

from diffgenome.analysis.models import DiffDocument, GenomeDocument
from diffgenome.protocol.formats import DIFF_FORMAT, GENOME_FORMAT

SCHEMAS: dict[str, tuple[str, type[GenomeDocument] | type[DiffDocument]]] = {
    "genome": (GENOME_FORMAT, GenomeDocument),
    "diff": (DIFF_FORMAT, DiffDocument),
}


def schema_for(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the format called ``name`` ("genome" or "diff")."""
    format_name, model = SCHEMAS[name]
    schema = model.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "urn:diffgenome:schema:" + format_name
    schema["title"] = format_name
    return schema


def schema_text(name: str) -> str:
    """Byte-stable text of a schema, as committed in docs/schema/."""
    return json.dumps(schema_for(name), indent=2, sort_keys=True) + "\n"


def schema_filename(name: str) -> str:
    return SCHEMAS[name][0].replace("/", "-") + ".schema.json"
