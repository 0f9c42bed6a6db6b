"""Versioned prompt files (``esrag/prompts/NAME_vN.txt``) with their SHA-256: the one place
prompts are loaded, for enrichment, key consolidation, query reformulation and answers.

Prompts are data: a change to a file changes its hash, every enriched chunk records the hash it
was built with (``Enrichment.prompt_sha256``), and the LLM cache is keyed by it, so an edited
prompt is recomputed and an unchanged one never is.

Placeholders are ``${name}`` (``string.Template``), substituted in one pass: text inserted for
one placeholder (chunk text full of ``{`` braces, ``$`` signs) is never scanned again.
"""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from esrag.errors import ConfigError

#: Prompt names shipped with esrag, at their current version.
ENRICH = "enrich_v1"
CONTEXT = "context_v1"
FIELDS = {f: f"field_{f}_v1" for f in ("title", "summary", "keywords", "questions")}
CONSOLIDATE = "consolidate_v1"
REFORMULATE = "reformulate_v1"
ANSWER = "answer_v1"


@dataclass(frozen=True, slots=True)
class Prompt:
    """A prompt template: its name (``enrich_v1``), text and the SHA-256 (hex) of the text."""

    name: str
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def placeholders(self) -> set[str]:
        """Names of the ``${name}`` placeholders in the template."""
        return {
            m.group("braced") or m.group("named")
            for m in string.Template.pattern.finditer(self.text)
            if m.group("braced") or m.group("named")
        }

    def render(self, **values: object) -> str:
        """The template with every placeholder replaced by ``str(value)``.

        Raises:
            ConfigError: a placeholder has no value, or a value names no placeholder.
        """
        missing = self.placeholders - set(values)
        extra = set(values) - self.placeholders
        if missing or extra:
            raise ConfigError(f"prompt {self.name}: missing values {sorted(missing)}, unknown values {sorted(extra)}")
        return string.Template(self.text).substitute({k: str(v) for k, v in values.items()})

    @classmethod
    def from_file(cls, path: Path | str) -> Prompt:
        """A prompt from any text file (its name is the file's stem)."""
        p = Path(path)
        return cls(p.stem, p.read_text(encoding="utf-8"))


def load_prompt(name: str) -> Prompt:
    """The shipped prompt ``name`` (``"enrich_v1"``) from ``esrag/prompts/``.

    Raises:
        ConfigError: no such prompt (lists the shipped ones).
    """
    folder = resources.files("esrag") / "prompts"
    path = folder / f"{name}.txt"
    if not path.is_file():
        shipped = sorted(p.name.removesuffix(".txt") for p in folder.iterdir() if p.name.endswith(".txt"))
        raise ConfigError(f"unknown prompt {name!r}; shipped: {', '.join(shipped)}")
    return Prompt(name, path.read_text(encoding="utf-8"))
