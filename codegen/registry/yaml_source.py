"""Read ops.yaml safely: bytes -> Python values that remember their lines.

The YAML is parsed into events by PyYAML's C parser (libyaml) where it is installed,
which keeps no recursion and is ~15x faster than the pure-Python one, and the values
are built here by one iterative walk over the events, so that:

- every mapping remembers its own line and each key's line (`Mapping.line`,
  `Mapping.key_lines`), every sequence each item's line (`Sequence.item_lines`);
- every problem is a `SourceError` with a 1-based line and, where there is one, the
  key it is under; nothing else escapes (no UnicodeDecodeError, ValueError for a
  4,301-digit number, RecursionError for deep nesting, or memory exhaustion);
- nesting is bounded (`MAX_DEPTH`) and so is what aliases add (`MAX_ALIAS_NODES`):
  a billion-laughs file fails at its first alias past the budget instead of
  expanding for minutes;
- a key given twice is an error rather than silently the last one.
"""
from __future__ import annotations

import errno
import re

import yaml
from yaml.constructor import SafeConstructor
from yaml.events import (AliasEvent, DocumentEndEvent, DocumentStartEvent, MappingEndEvent,
                         MappingStartEvent, ScalarEvent, SequenceEndEvent, SequenceStartEvent,
                         StreamEndEvent, StreamStartEvent)
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

_PARSER = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
MAX_DEPTH = 64  # ops.yaml needs 5 (ops, entry, xfail list, xfail item, samples)
MAX_ALIAS_NODES = 10_000  # values that aliases may add, counted as expanded
MAX_INT_BITS = 4096  # far beyond any registry's numbers, far below Python's 4,300-digit str limit
MAX_SCALAR_REPR = 60  # characters of a value quoted in a message

STR, MAP, SEQ, MERGE = ("tag:yaml.org,2002:" + t for t in ("str", "map", "seq", "merge"))
# characters YAML 1.1 allows in a stream (libyaml's check); a BOM is U+FEFF, allowed
_UNPRINTABLE = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


class SourceError(Exception):
    """A problem at a 1-based `line`, under `key` (a mapping key, or None)."""

    def __init__(self, line: int, message: str, key: object = None, has_key: bool = False):
        super().__init__(f"line {line}: {message}")
        self.line, self.message, self.key, self.has_key = max(line, 1), message, key, has_key


class Mapping(dict):
    """A YAML mapping that remembers its own line and each key's line."""

    line: int = 1
    key_lines: dict


class Sequence(list):
    """A YAML sequence that remembers its own line and the line of each item."""

    line: int = 1
    item_lines: list


def key_name(key: object) -> str:
    """A mapping key as ops.yaml spells it, for messages: 'null', 'false', '0', 'func'."""
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return short(key) if not isinstance(key, str) else short(key, quote=False)


def short(value: object, quote: bool = True, limit: int = MAX_SCALAR_REPR) -> str:
    """A bounded repr for messages (never the whole of an expanded structure)."""
    try:
        text = repr(value) if quote else str(value)
    except (ValueError, RecursionError):  # an int beyond sys.get_int_max_str_digits()
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


MAX_FILE_BYTES = 64 << 20  # a 1,000-op registry is ~650 KB


def read(path) -> bytes:
    """The file's bytes, at most MAX_FILE_BYTES (so --ops /dev/zero fails instead of
    filling memory); OSError otherwise."""
    with open(path, "rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise OSError(errno.EFBIG, f"larger than {MAX_FILE_BYTES >> 20} MiB, which no registry needs")
    return data


_LINE_BREAKING = re.compile("[\x00-\x1f\x7f\x85\u2028\u2029]")


def one_line(text: str, limit: int) -> str:
    """`text` for a one-line message: line breaks and control characters escaped, and at
    most `limit` characters."""
    text = _LINE_BREAKING.sub(lambda m: m.group().encode("unicode_escape").decode(), text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def decode(data: bytes) -> str:
    """UTF-8 text of ops.yaml, or a SourceError at the first byte that is not."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise SourceError(line, f"byte 0x{data[e.start]:02x} at column {column} is not UTF-8; "
                                "ops.yaml must be UTF-8 text") from None
    bad = _UNPRINTABLE.search(text)
    if bad:
        pos = bad.start()
        line = text.count("\n", 0, pos) + 1
        column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        raise SourceError(line, f"character U+{ord(bad.group()):04X} at column {column} is a control "
                                "character, which YAML does not allow (use an escape in a quoted string)")
    return text


class _Frame:
    __slots__ = ("value", "line", "anchor", "size", "key", "key_line", "has_key", "merges")

    def __init__(self, value, line, anchor):
        self.value, self.line, self.anchor, self.size = value, line, anchor, 1
        self.key, self.key_line, self.has_key, self.merges = None, 0, False, None


_resolver = Resolver()
_constructor = SafeConstructor()
_SCALAR_CONSTRUCTORS = {tag: f for tag, f in SafeConstructor.yaml_constructors.items()
                        if tag and tag not in (MAP, SEQ) and not tag.endswith(("omap", "pairs", "set"))}


def load(text: str) -> object:
    """The single YAML document in `text` as Mapping/Sequence/scalars (None if empty)."""
    try:
        return _compose(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise SourceError((mark.line + 1) if mark else 1, f"not valid YAML: {e.problem or e.context}") from None
    except yaml.reader.ReaderError as e:  # decode() already refuses what libyaml's reader does
        line = text.count("\n", 0, max(e.position, 0)) + 1
        raise SourceError(line, f"not valid YAML: {e.reason}") from None
    except yaml.YAMLError as e:
        raise SourceError(1, f"not valid YAML: {e}") from None


def _compose(text: str) -> object:
    stack: list[_Frame] = []
    anchors: dict[str, tuple[object, int]] = {}  # name -> (value, size as expanded)
    open_anchors: set[str] = set()
    alias_nodes = 0
    documents = 0
    root: list = []
    resolved: dict[str, str] = {}  # plain scalar -> tag (the resolver's regexes are slow)

    def context() -> tuple[object, bool]:
        """The mapping key the current event is under, for messages."""
        for frame in reversed(stack):
            if isinstance(frame.value, dict) and frame.has_key:
                return frame.key, True
        return None, False

    def fail(line: int, message: str):
        key, has_key = context()
        raise SourceError(line, message, key, has_key)

    def deliver(value: object, line: int, size: int) -> None:
        if not stack:
            root.append(value)
            return
        top = stack[-1]
        top.size += size
        container = top.value
        if isinstance(container, list):
            container.append(value)
            container.item_lines.append(line)
        elif not top.has_key:
            if isinstance(value, (dict, list)):
                fail(line, "a mapping key must be a scalar (a name such as 'func'), not a "
                           f"{'mapping' if isinstance(value, dict) else 'sequence'}")
            top.key, top.key_line, top.has_key = value, line, True
        else:
            key = top.key
            top.has_key = False
            if top.merges is not None and key is _MERGE_KEY:
                top.merges.append((value, line))
                return
            if key in container:
                top.has_key = True  # name the key in the message
                fail(top.key_line, f"key {key_name(key)!r} is given twice in this mapping "
                                   f"(first on line {container.key_lines[key]})")
            container[key] = value
            container.key_lines[key] = top.key_line

    for event in yaml.parse(text, Loader=_PARSER):
        cls = type(event)
        line = event.start_mark.line + 1 if event.start_mark is not None else 1
        if cls is ScalarEvent:
            tag, value = event.tag, event.value
            if tag is None or tag == "!":
                if event.implicit[0]:
                    tag = resolved.get(value)
                    if tag is None:
                        tag = resolved[value] = _resolver.resolve(ScalarNode, value, (True, False))
                else:
                    tag = STR
            if tag == STR:
                result = value
            elif tag == MERGE and stack and isinstance(stack[-1].value, dict) and not stack[-1].has_key:
                result = _MERGE_KEY
                if stack[-1].merges is None:
                    stack[-1].merges = []
            else:
                construct = _SCALAR_CONSTRUCTORS.get(tag)
                if construct is None:
                    fail(line, f"unsupported YAML tag {tag!r}; ops.yaml holds strings, numbers, "
                               "booleans, null, lists and mappings")
                try:
                    result = construct(_constructor, ScalarNode(tag, value, event.start_mark, event.end_mark))
                except ValueError as e:
                    if tag.endswith(":int") and "digits" in str(e):
                        fail(line, f"a number of {len(value)} characters is too long; "
                                   "write at most 4,300 digits")
                    fail(line, f"cannot read {short(value)} as {tag.rsplit(':', 1)[-1]}: {e}")
                except Exception as e:  # ConstructorError (bad !!binary, timestamps), OverflowError
                    fail(line, f"cannot read {short(value)} as {tag.rsplit(':', 1)[-1]}: "
                               f"{getattr(e, 'problem', None) or e}")
                if type(result) is int and result.bit_length() > MAX_INT_BITS:
                    # 0x/0b/sexagesimal spellings: Python could not even print it (4,300 digits)
                    fail(line, f"the number {short(value, limit=30)} is too large (more than "
                               f"{MAX_INT_BITS:,} bits)")
            if event.anchor is not None:
                anchors[event.anchor] = (result, 1)
            deliver(result, line, 1)
        elif cls is MappingStartEvent or cls is SequenceStartEvent:
            if len(stack) >= MAX_DEPTH:
                fail(line, f"nested more than {MAX_DEPTH} levels deep")
            tag = event.tag
            is_map = cls is MappingStartEvent
            if tag not in (None, "!", MAP if is_map else SEQ):
                fail(line, f"unsupported YAML tag {tag!r} on a {'mapping' if is_map else 'sequence'}")
            if is_map:
                value = Mapping()
                value.key_lines = {}
            else:
                value = Sequence()
                value.item_lines = []
            value.line = line
            if event.anchor is not None:
                open_anchors.add(event.anchor)
            stack.append(_Frame(value, line, event.anchor))
        elif cls is MappingEndEvent or cls is SequenceEndEvent:
            frame = stack.pop()
            if frame.merges:
                _merge(frame, fail)
            if frame.anchor is not None:
                open_anchors.discard(frame.anchor)
                anchors[frame.anchor] = (frame.value, frame.size)
            deliver(frame.value, frame.line, frame.size)
        elif cls is AliasEvent:
            name = event.anchor
            if name in open_anchors:
                fail(line, f"alias *{name} refers to a collection that contains it")
            if name not in anchors:
                fail(line, f"alias *{name} has no anchor &{name} above it")
            value, size = anchors[name]
            alias_nodes += size
            if alias_nodes > MAX_ALIAS_NODES:
                fail(line, f"aliases expand to more than {MAX_ALIAS_NODES:,} values (*{name} adds "
                           f"{size:,}); use aliases for small repeated values only")
            deliver(value, line, size)
        elif cls is DocumentStartEvent:
            documents += 1
            if documents > 1:
                raise SourceError(line, "expected a single YAML document; found a second '---'")
            anchors.clear()
        elif cls in (DocumentEndEvent, StreamStartEvent, StreamEndEvent):
            pass
    return root[0] if root else None


class _MergeKey:
    def __repr__(self) -> str:
        return "<<"


_MERGE_KEY = _MergeKey()


def _merge(frame: _Frame, fail) -> None:
    """`<<: *base` or `<<: [*a, *b]`: the keys the mapping does not give itself."""
    mapping = frame.value
    for value, line in frame.merges:
        sources = value if isinstance(value, list) else [value]
        for source in sources:
            if not isinstance(source, dict):
                fail(line, "a merge key '<<' takes a mapping or a list of mappings")
            for key, item in source.items():
                if key not in mapping:
                    mapping[key] = item
                    mapping.key_lines[key] = line
