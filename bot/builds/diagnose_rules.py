"""The rules ``bot.builds.diagnose`` reads logs with: loaded from ``bot/builds/rules/diagnose.toml`` (plus a user's
file, whose rules come first), checked when loaded, and compiled into the keyword finders the scan runs."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache, partial
from importlib import resources
from pathlib import Path
from string import Formatter
from typing import Any, NoReturn

from bot.util.errors import ConfigError

CATEGORIES = frozenset({
    "oom_compiler", "oom_kernel", "missing_pymodule", "missing_syshdr", "cmake_version", "unsupported_arch",
    "disk_full", "hostcc_mismatch", "linker_error", "compile_error", "unknown",
})
BUILTIN_RULES = "bot/builds/rules/diagnose.toml"
_RULE_KEYS = {"name", "category", "patterns", "fix", "keywords", "priority", "follow_on", "block", "near",
              "within", "defer", "yields_to"}
_UNKNOWN_TEXTS = {"empty", "starts_late", "still_building", "succeeded", "succeeded_despite", "only_warnings",
                  "no_error", "success"}
_KINDS = {list: "a list of non-empty strings", dict: "a table of strings", int: "a whole number",
          bool: "true or false"}


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
    defer: int = 0                           # lines after a hit where a more specific rule's line wins
    yields_to: frozenset[str] = frozenset()  # categories whose evidence anywhere in the log wins


@dataclass(frozen=True)
class Rules:
    rules: tuple[Rule, ...]                  # in precedence order
    packages: Mapping[str, str]              # Python module -> pip package
    unknown: Mapping[str, str]               # fixes for logs without an error
    success: tuple[re.Pattern[str], ...]     # lines that end a successful build
    keywords: Mapping[str, tuple[str, ...]]  # trigger -> the keywords holding it
    finders: Mapping[str, re.Pattern[str]]   # trigger -> a regex for its keywords, trigger first
    rules_of: Mapping[str, tuple[int, ...]]  # keyword -> the rules (indexes) it belongs to


def load_rules(extra: Path | None = None) -> Rules:
    """The built-in rules, plus a user rules file whose rules take precedence (same name: replaced)."""
    if extra is None:
        return _builtin_rules()
    try:
        text = Path(extra).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read rules file: {exc}", path=str(extra)) from exc
    return _combine(_parse_file(text, str(extra)), _builtin_file())


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
    text = resources.files("bot.builds").joinpath("rules", "diagnose.toml").read_text(encoding="utf-8")
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
    text after the trigger is matched first, then the whole keyword is checked by a lookbehind. A class of
    the characters that can follow the trigger guards the alternatives, so that the common miss (the
    "rror" of "-Werror=") fails on one check however many keywords share the trigger."""
    if trigger in keywords:
        return re.compile(re.escape(trigger))
    tails = [(keyword, keyword.split(trigger, 1)[1]) for keyword in keywords]
    ways = sorted(f"{re.escape(tail)}(?<={re.escape(keyword)})" for keyword, tail in tails if tail)
    firsts = "".join(sorted({re.escape(tail[0]) for _, tail in tails if tail}))
    guarded = [f"(?=[{firsts}])(?:{'|'.join(ways)})"] if ways else []
    ends = sorted(f"(?<={re.escape(keyword)})" for keyword, tail in tails if not tail)
    return re.compile(f"{re.escape(trigger)}(?:{'|'.join([*guarded, *ends])})")


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
        fields = {"first": "x", "last": "x", "warnings": "1", "seen": "x"}
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
    near = _patterns([table["near"]], "near", fail)[0] if "near" in table else None
    groups = set.intersection(*(set(pattern.groupindex) for pattern in patterns))
    groups |= set(near.groupindex) if near is not None else set()
    _check_template(fix, dict.fromkeys(groups | ({"package"} if "module" in groups else set()), "x"), fail)
    if "keywords" not in table:
        fail('needs keywords = [...]: text that every line the rule should match holds, such as '
             '"numa.h: No such" (lines holding no keyword of any rule are skipped without running a regex)')
    if (within := _get(table, "within", 10, int, fail)) < 1:
        fail("within must be at least 1")
    if (defer := _get(table, "defer", 0, int, fail)) < 0:
        fail("defer must be 0 or more")
    if unknown_categories := set(yields_to := _get(table, "yields_to", [], list, fail)) - CATEGORIES:
        fail(f"yields_to names unknown categories {sorted(unknown_categories)}")
    return Rule(name=name, category=category, patterns=patterns, fix=fix,
                keywords=tuple(_get(table, "keywords", [], list, fail)),
                priority=_get(table, "priority", 0, int, fail),
                follow_on=_get(table, "follow_on", False, bool, fail),
                block=_get(table, "block", False, bool, fail), near=near, within=within, defer=defer,
                yields_to=frozenset(yields_to))


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
