"""Find the first real error in a build log, and the known fix for it.

``diagnose(text)`` is pure: log text in, :class:`Diagnosis` out. What log lines mean and what to do about
them is data — ``bot/rules/diagnose.toml`` (its format is documented there) plus an optional user rules
file; this module is the generic engine:

1. Pre-filter. A few short triggers ("rror", "not", "Killed", ...) are searched for over the whole text,
   each with one regex that also checks the rules' keywords at every hit (``-Werror`` holds "rror" but
   no keyword such as ``": error:"``), so the tens of thousands of progress and command lines never
   reach Python code. Only the rules with a keyword in a candidate line run their regexes.
2. A candidate line loses its prefixes (timestamps, Docker BuildKit step, ``[build]``, dmesg time), and
   the first rule that matches, in precedence order (user rules, then priority, then file order), is
   the line's rule.
3. The earliest line whose rule is not a follow-on is the answer; a block rule (``CMake Error at ...:``)
   reports the block's message line. Follow-on summaries (pip, ninja, collect2) are only a fallback.
4. Nothing found: ``unknown``, with a fix that says where to look instead (log cut, still building, ...).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from importlib import resources
from pathlib import Path
from string import Formatter
from typing import Any, NoReturn

from bot.errors import ConfigError

CATEGORIES = frozenset({
    "oom_compiler", "oom_kernel", "missing_pymodule", "missing_syshdr", "cmake_version", "unsupported_arch",
    "disk_full", "hostcc_mismatch", "linker_error", "compile_error", "unknown",
})
BUILTIN_RULES = "bot/rules/diagnose.toml"
_RULE_KEYS = {"name", "category", "patterns", "fix", "keywords", "priority", "follow_on", "block", "near",
              "within"}
_UNKNOWN_TEXTS = {"empty", "starts_late", "still_building", "succeeded", "only_warnings", "no_error",
                  "success"}
_KINDS = {list: "a list of non-empty strings", dict: "a table of strings", int: "a whole number",
          bool: "true or false"}
_BLOCK_LINES = 200        # how far below a block header its message is looked for
_WINDOW = 1 << 20         # characters pre-filtered at a time, so an early error returns early
_COMMON = " etaoinsr-lcd/._hmup\tf0b1g2x3C=4M5y6k7\"w8v9ADEFIBULSNOTRP'GH,:;()[]"   # in build logs, roughly
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_CONTINUED = re.compile(r'\s+(?:\d+ +)?\||\s+File "|\s+from ')   # source context, traceback, include chain
_PROGRESS = re.compile(r"\[\s*(?:(?P<step>\d{1,9})/(?P<total>\d{1,9})|(?P<percent>\d{1,3})%)\]")
_PREFIX = re.compile(r"""(?:              # each eats one separating space: the tool's own indent stays
    \d{4}-\d\d-\d\d[T\ ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\ ?     # 2025-06-01T12:00:00.123Z
  | \[\d{4}-\d\d-\d\d[T\ ][^\]\n]{0,40}\]\ ?                                    # [2025-06-01 12:00:00]
  | \[\d\d:\d\d:\d\d(?:[.,]\d+)?\]\ ?                                            # [12:00:00.123]
  | \[\s*\d+\.\d+\]\ ?                                                           # dmesg [12345.678901]
  | [A-Z][a-z]{2}\ [\ \d]\d\ \d\d:\d\d:\d\d\ \S+\ [\w./-]+(?:\[\d+\])?:\ ?    # Jun  1 12:00:00 host kernel:
  | \#\d+\ \d+(?:\.\d+)?\ ?                                                       # Docker BuildKit: #12 34.5
  | \[[A-Za-z][\w.-]*\]\                                                        # [build]
  | (?:DEBUG|TRACE)\ (?=\S)                                                      # uv -v
)+""", re.X)


@dataclass(frozen=True)
class Diagnosis:
    category: str
    line: str
    fix: str
    line_number: int | None = None

    def to_json(self) -> dict[str, str]:
        return {"category": self.category, "line": self.line, "fix": self.fix}


@dataclass(frozen=True)
class Rule:
    name: str
    category: str
    patterns: tuple[re.Pattern[str], ...]
    fix: str
    keywords: tuple[str, ...]
    priority: int = 0
    follow_on: bool = False
    block: bool = False
    near: re.Pattern[str] | None = None
    within: int = 10


@dataclass(frozen=True)
class Rules:
    rules: tuple[Rule, ...]                  # in precedence order
    packages: Mapping[str, str]              # Python module -> pip package
    unknown: Mapping[str, str]               # fixes for logs without an error
    success: tuple[re.Pattern[str], ...]     # lines that end a successful build
    keywords: Mapping[str, tuple[str, ...]]  # trigger -> the keywords holding it
    finders: Mapping[str, re.Pattern[str]]   # trigger -> a regex for its keywords, trigger first
    rules_of: Mapping[str, tuple[int, ...]]  # keyword -> the rules (indexes) it belongs to


def diagnose(text: str, *, rules: Rules | None = None) -> Diagnosis:
    """The first real error in a build log, its category and the known fix."""
    return _Log(text, rules or load_rules()).diagnosis()


def diagnose_file(path: Path, *, rules: Rules | None = None) -> Diagnosis:
    """:func:`diagnose` for a log file, read in one go as bytes; bad UTF-8 never stops it."""
    return diagnose(Path(path).read_bytes().decode("utf-8", errors="replace"), rules=rules)


def load_rules(extra: Path | None = None) -> Rules:
    """The built-in rules, plus a user rules file whose rules take precedence (same name: replaced)."""
    if extra is None:
        return _builtin_rules()
    try:
        text = Path(extra).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read rules file: {exc}", path=str(extra)) from exc
    return _combine(_parse_file(text, str(extra)), _builtin_file())


# --- the scan -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Hit:
    rule: Rule
    match: re.Match[str]
    start: int                # offset of the reported line


class _Log:
    def __init__(self, text: str, rules: Rules) -> None:
        self.raw, self.rules = text, rules
        self.text = _ANSI.sub("", text) if "\x1b" in text else text     # same lines, same count

    def diagnosis(self) -> Diagnosis:
        fallback: _Hit | None = None
        for start, triggers in self._candidates():
            line = self._line_at(start)[0]
            hit = self._match(line, start, self._rules_for(line, triggers))
            if hit is not None and not hit.rule.follow_on:
                return self._diagnosis(self._in_block(hit) if hit.rule.block else hit)
            if hit is not None and (fallback is None or _rank(hit) > _rank(fallback)):
                fallback = hit
        if fallback is not None and fallback.rule.category != "unknown":
            return self._diagnosis(fallback)
        return Diagnosis("unknown", "", self._where_to_look(fallback))

    def _candidates(self) -> Iterator[tuple[int, list[str]]]:
        """Lines holding a keyword, in order: their start offset and triggers. A window at a time."""
        text, size, begin = self.text, len(self.text), 0
        while begin < size:
            end = text.find("\n", min(begin + _WINDOW, size))
            end = size if end < 0 else end + 1
            found: dict[int, list[str]] = {}
            for trigger, finder in self.rules.finders.items():
                for at in _find_all(text, trigger, finder, begin, end):
                    triggers = found.setdefault(text.rfind("\n", begin, at) + 1 or begin, [])
                    if trigger not in triggers:
                        triggers.append(trigger)
            yield from sorted(found.items())
            begin = end

    def _rules_for(self, line: str, triggers: list[str]) -> list[Rule]:
        """The rules with a keyword in `line` (which holds `triggers`), in precedence order."""
        keywords = self.rules.keywords
        present = {keyword for trigger in triggers for keyword in keywords[trigger] if keyword in line}
        return [self.rules.rules[i] for i in sorted({i for k in present for i in self.rules.rules_of[k]})]

    def _match(self, line: str, start: int, rules: Sequence[Rule]) -> _Hit | None:
        body = _strip_prefix(line).lstrip()
        for rule in rules:
            for pattern in rule.patterns:
                match = pattern.search(body)
                if match is not None and (rule.near is None or self._near(start, rule.near, rule.within)):
                    return _Hit(rule, match, start)
        return None

    def _near(self, start: int, near: re.Pattern[str], within: int) -> bool:
        """Does `near` match in the `within` lines before or after the line at `start`?"""
        low = high = start
        for _ in range(within):
            low = self.text.rfind("\n", 0, max(low - 1, 0)) + 1
            high = self._line_at(high)[1]
        return near.search(self.text, low, high) is not None

    def _in_block(self, header: _Hit) -> _Hit:
        """The message of a block: its first more-indented line that a rule knows, else its first line."""
        indent = _indent(_strip_prefix(self._line_at(header.start)[0]))
        pos, first = self._line_at(header.start)[1], None
        for _ in range(_BLOCK_LINES):
            line, following = self._line_at(pos)
            body = _strip_prefix(line)
            if pos >= len(self.text) or (body.strip() and _indent(body) <= indent):
                break
            hit = self._match(line, pos, self.rules.rules) if body.strip() else None
            if hit is not None and not hit.rule.follow_on and not hit.rule.block:
                return hit
            first = pos if first is None and body.strip() else first
            pos = following
        return header if first is None else _Hit(header.rule, header.match, first)

    def _line_at(self, start: int) -> tuple[str, int]:
        """The line starting at `start` without its line end, and where the next line starts."""
        end = self.text.find("\n", start)
        end = len(self.text) if end < 0 else end
        return self.text[start:end].rstrip("\r"), end + 1

    def _diagnosis(self, hit: _Hit) -> Diagnosis:
        number = self.text.count("\n", 0, hit.start) + 1
        line = self._line_at(hit.start)[0] if self.text is self.raw else self.raw.split("\n")[number - 1]
        return Diagnosis(hit.rule.category, line.rstrip("\r"), self._fix(hit), number)

    def _fix(self, hit: _Hit) -> str:
        values = {name: value or "?" for name, value in hit.match.groupdict().items()}
        if "module" in values:
            top = values["module"].split(".")[0]
            packages = self.rules.packages
            values["package"] = packages.get(values["module"]) or packages.get(top) or top
        return hit.rule.fix.format_map(values)

    def _where_to_look(self, fallback: _Hit | None) -> str:
        """The fix of a log without an error: what its follow-on lines and its shape tell."""
        texts, said = self.rules.unknown, [self._fix(fallback)] if fallback else []
        head = [_strip_prefix(line) for line in self.text.split("\n", 40)[:40] if line.strip()]
        tail = [_strip_prefix(line).strip() for line in self.text[-3000:].split("\n")[-12:] if line.strip()]
        if not head or not tail:
            return texts["empty"]
        if _CONTINUED.match(head[0]) or _progress(head[0].lstrip(), started=True):
            said.append(texts["starts_late"].format(first=head[0].strip()))
        if _progress(tail[-1], started=False):
            said.append(texts["still_building"].format(last=tail[-1]))
        elif fallback is None and any(done.search(line) for done in self.rules.success for line in tail):
            said.append(texts["succeeded"].format(last=tail[-1]))
        elif fallback is None and (warnings := self.text.lower().count("warning")):
            said.append(texts["only_warnings"].format(warnings=warnings))
        return " ".join(said) or texts["no_error"]


def _find_all(text: str, trigger: str, finder: re.Pattern[str], begin: int, end: int) -> Iterator[int]:
    """Where `finder` (the trigger followed or preceded by one of its keywords) matches in text[begin:end].

    Searching for one character is memchr, ~10x faster than a regex or str.find for a short string: when
    the trigger's rarest-looking character is rare in this part of the log too, that character is searched
    for and the finder tried where it is; once it proves common, the finder scans the rest itself."""
    anchor = max(trigger, key=lambda char: _COMMON.find(char) if char in _COMMON else len(_COMMON))
    offset, budget = trigger.index(anchor), (end - begin) >> 11
    common = text.count(anchor, begin, begin + 8192) > 4
    at = begin + offset if common else text.find(anchor, begin + offset, end)
    while at >= 0 and budget > 0 and not common:
        budget -= 1
        if finder.match(text, at - offset, end):
            yield at - offset
        at = text.find(anchor, at + 1, end)
    if at >= 0 and (len(trigger) < 8 or finder.pattern != re.escape(trigger)):   # re beats str.find here
        yield from (hit.start() for hit in finder.finditer(text, at - offset, end))
    elif at >= 0:
        at = text.find(trigger, at - offset, end)
        while at >= 0:
            yield at
            at = text.find(trigger, at + 1, end)


def _strip_prefix(line: str) -> str:
    prefix = _PREFIX.match(line)
    return line[prefix.end():] if prefix else line


def _indent(body: str) -> int:
    return len(body) - len(body.lstrip())


def _progress(body: str, *, started: bool) -> bool:
    """Is `body` a progress line past the first step (started) / short of the last one (not started)?"""
    found = _PROGRESS.match(body)
    if found is None:
        return False
    if found["percent"] is not None:
        return int(found["percent"]) > 0 if started else int(found["percent"]) < 100
    return int(found["step"]) > 1 if started else int(found["step"]) < int(found["total"])


def _rank(hit: _Hit) -> tuple[bool, int]:
    """Which follow-on line is the better fallback: one with a real category, then by priority."""
    return hit.rule.category != "unknown", hit.rule.priority


# --- loading and checking rules -------------------------------------------------------------------------

@dataclass(frozen=True)
class _RuleFile:
    rules: tuple[Rule, ...]
    triggers: tuple[str, ...]
    packages: Mapping[str, str]
    unknown: Mapping[str, str]
    success: tuple[re.Pattern[str], ...]


@lru_cache(maxsize=1)
def _builtin_file() -> _RuleFile:
    text = resources.files("bot").joinpath("rules", "diagnose.toml").read_text(encoding="utf-8")
    return _parse_file(text, BUILTIN_RULES)


@lru_cache(maxsize=1)
def _builtin_rules() -> Rules:
    return _combine(None, _builtin_file())


def _combine(user: _RuleFile | None, base: _RuleFile) -> Rules:
    """One rule set: user rules first (replacing built-in ones of the same name), each file by priority;
    every keyword filed under the first trigger hint it holds, or under itself."""
    replaced = {rule.name for rule in user.rules} if user else set()
    ordered = [*_by_priority(user.rules if user else ()),
               *_by_priority(rule for rule in base.rules if rule.name not in replaced)]
    rules_of: dict[str, list[int]] = {}
    for index, rule in enumerate(ordered):
        for keyword in rule.keywords:
            rules_of.setdefault(keyword, []).append(index)
    hints, keywords = [*(user.triggers if user else ()), *base.triggers], dict[str, list[str]]()
    for keyword in sorted(rules_of, key=len):
        trigger = next((hint for hint in [*hints, *keywords] if hint in keyword), keyword)
        keywords.setdefault(trigger, []).append(keyword)
    return Rules(
        rules=tuple(ordered),
        packages={**base.packages, **(user.packages if user else {})},
        unknown={**base.unknown, **(user.unknown if user else {})},
        success=(*(user.success if user else ()), *base.success),
        keywords={trigger: tuple(found) for trigger, found in keywords.items()},
        finders={trigger: _finder(trigger, found) for trigger, found in keywords.items()},
        rules_of={keyword: tuple(indexes) for keyword, indexes in rules_of.items()},
    )


def _finder(trigger: str, keywords: list[str]) -> re.Pattern[str]:
    """One regex for `keywords`, written trigger first so that re scans for the trigger at C speed; the
    text after the trigger is matched first (most misses fail on one character), then the whole keyword
    is checked by a lookbehind."""
    if trigger in keywords:
        return re.compile(re.escape(trigger))
    ways = sorted(f"{re.escape(k.split(trigger, 1)[1])}(?<={re.escape(k)})" for k in keywords)
    return re.compile(f"{re.escape(trigger)}(?:{'|'.join(ways)})")


def _by_priority(rules: Iterable[Rule]) -> list[Rule]:
    return sorted(rules, key=lambda rule: -rule.priority)


def _parse_file(text: str, label: str) -> _RuleFile:
    def fail(problem: str, key: str | None = None) -> NoReturn:
        raise ConfigError(problem, path=label, key=key)

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        fail(f"not valid TOML: {exc}")
    if extra := set(doc) - {"triggers", "rule", "packages", "unknown"}:
        fail(f"unknown key(s) {sorted(extra)}; expected triggers, [[rule]], [packages], [unknown]")
    if not isinstance(doc.get("rule", []), list):
        fail("rules must be written as [[rule]] tables", "rule")
    rules = tuple(_parse_rule(table, i, label) for i, table in enumerate(doc.get("rule", [])))
    names = [rule.name for rule in rules]
    if duplicate := next((name for name in names if names.count(name) > 1), None):
        fail("two rules have this name", f"rule {duplicate}")
    unknown = dict(_get(doc, "unknown", {}, dict, fail, values=False))
    success = _patterns(unknown.pop("success", []), "unknown.success", partial(fail, key="unknown"))
    if extra := set(unknown) - _UNKNOWN_TEXTS:
        fail(f"unknown key(s) {sorted(extra)}; expected {sorted(_UNKNOWN_TEXTS)}", "unknown")
    for key in unknown:
        _get(unknown, key, "", str, partial(fail, key="unknown"))
        fields = {"first": "x", "last": "x", "warnings": "1"}
        _check_template(unknown[key], fields, partial(fail, key=f"unknown.{key}"))
    triggers = tuple(_get(doc, "triggers", [], list, fail))
    return _RuleFile(rules, triggers, _get(doc, "packages", {}, dict, fail), unknown, success)


def _parse_rule(table: Any, index: int, label: str) -> Rule:
    name = table.get("name") if isinstance(table, dict) else None
    where = f"rule {name}" if isinstance(name, str) and name.strip() else f"rule #{index + 1}"

    def fail(problem: str) -> NoReturn:
        raise ConfigError(problem, path=label, key=where)

    if not isinstance(table, dict):
        fail("each [[rule]] must be a table")
    if extra := set(table) - _RULE_KEYS:
        fail(f"unknown key(s) {sorted(extra)}; allowed: {sorted(_RULE_KEYS)}")
    if not isinstance(name, str) or not name.strip():
        fail("needs a name")
    if (category := table.get("category")) not in CATEGORIES:
        fail(f"category {category!r} is not one of {sorted(CATEGORIES)}")
    patterns = _patterns(table.get("patterns"), "patterns", fail)
    if not patterns or not isinstance(fix := table.get("fix"), str) or not fix.strip():
        fail("needs patterns and a fix")
    groups = set.intersection(*(set(pattern.groupindex) for pattern in patterns))
    _check_template(fix, dict.fromkeys(groups | ({"package"} if "module" in groups else set()), "x"), fail)
    if "keywords" not in table:
        fail('needs keywords = [...]: text that every line the rule should match holds, such as '
             '"numa.h: No such" (lines holding no keyword of any rule are skipped without running a regex)')
    near = _patterns([table["near"]], "near", fail)[0] if "near" in table else None
    if (within := _get(table, "within", 10, int, fail)) < 1:
        fail("within must be at least 1")
    return Rule(name=name, category=category, patterns=patterns, fix=fix,
                keywords=tuple(_get(table, "keywords", [], list, fail)),
                priority=_get(table, "priority", 0, int, fail),
                follow_on=_get(table, "follow_on", False, bool, fail),
                block=_get(table, "block", False, bool, fail), near=near, within=within)


def _patterns(value: Any, key: str, fail: Callable[[str], NoReturn]) -> tuple[re.Pattern[str], ...]:
    if not isinstance(value, list) or not all(isinstance(pattern, str) and pattern for pattern in value):
        fail(f"{key} must be a list of regular expressions (strings)")
    compiled = []
    for number, pattern in enumerate(value, 1):
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            fail(f"{key} #{number} is not a valid regular expression: {exc} (in {pattern!r})")
    return tuple(compiled)


def _check_template(template: str, values: dict[str, str], fail: Callable[[str], NoReturn]) -> None:
    """Fail unless `template` formats with exactly the names in `values`."""
    try:
        for _, field, _, _ in Formatter().parse(template):
            if field is not None and field not in values:
                fail(f"the fix uses {{{field}}}, which is not a named group of every pattern "
                     f"(available: {sorted(values) or 'none'}; write {{{{ and }}}} for literal braces)")
        template.format_map(values)
    except (ValueError, KeyError, IndexError) as exc:
        fail(f"the fix is not a valid template: {exc}")


def _get(table: Mapping[str, Any], key: str, default: Any, kind: type, fail: Callable[[str], NoReturn],
         values: bool = True) -> Any:
    """table[key] (or `default`), failing unless it is a `kind`; a list or dict must hold strings."""
    value = table.get(key, default)
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)) or (
            values and not all(isinstance(item, str) and item for item in items)):
        fail(f"{key} must be {_KINDS.get(kind, 'a string')}")
    return value
