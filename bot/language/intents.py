"""Chat text → Plan: what a message in an ops channel (or a ``/rigops`` command) asks rigops to do.

Pure and synchronous: no I/O, no Slack types. The Plan holds only actions from the fixed vocabulary, host and
build names taken from the config, and bounded integers; chat text never reaches a shell.

How a plain message is read (the tables live in ``bot.language.intents_words``):

1. normalise: Slack markup, code, quoted text, URLs and emoji are removed, the text is lower-cased and cut to
   a few KB;
2. names: config host and build names (whole words) become ``HOST``/``BUILD``, and so does a host-like word
   in a clear position ("on h100", "@gpu-7", "h100's") that the config does not know;
3. clauses: the text is split at punctuation and "and"/"then"; each clause is a request only if it is not a
   story (past, future, habit), not negated, and (unless the bot was addressed) not a deliberation;
4. hits: each clause gives *strong* hits (a clear request: "kill the build", "try -j20", "how's memory?") and
   *weak* ones (a bare "restart", "stop", "try again", "fewer jobs"). Weak hits count only when the bot was
   addressed, the message is in a thread rigops acts in (its build's thread: "try again" there means the build),
   or the message has memory trouble or a strong hit;
5. memory trouble ("oom-ing", "cc1plus got killed", "swapping hard") adds ``mem``, and turns a rebuild into
   kill, mem, rebuild; "restart" also means kill then rebuild.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from bot.config import ALL_HOSTS, NAME_RE, BuildConfig, Config
from bot.language import intents_acts as acts
from bot.language import intents_model as model
from bot.language import intents_numbers as n
from bot.language import intents_tolerance as tol
from bot.language import intents_words as w
from bot.language.commands import Command, by_word, command, step_names
from bot.language.plan import (
    MAX_JOBS,
    MAX_LOG_LINES,
    MIN_JOBS,
    Action,
    Plan,
    Question,
    Step,
    ThreadContext,
    half_jobs,
)

__all__ = ["parse", "parse_command"]
RELATIVE_JOBS_WARNING = (
    "this thread has no earlier build of it to go by, so the rebuild uses its default -j (what past runs' "
    "memory advises, else the configured jobs, else what a first estimate lets fit in memory); "
    "name a number (e.g. 'try -j16') to pick one"
)

def _where(actions: set[str], test: Callable[[Command], bool]) -> set[str]:
    """The actions whose command row passes ``test``."""
    return {a for a in actions if test(command(a))}


def _on_hosts(actions: set[str]) -> set[str]:
    """The actions that run on a host (not hosts or help)."""
    return _where(actions, lambda c: c.hosts != "none")


# --- /rigops subcommands -------------------------------------------------------------------------------

CMD_JOBS_RE = re.compile(r"(?:-{1,2}j(?:obs)?=?|j|max_jobs=)?(-?[0-9]+)")
CMD_LINES_RE = re.compile(r"(?:-n|--lines=?)?(-?[0-9]+)")
CMD_JOIN_RE = re.compile(r"(?<!\S)(-{1,2}j(?:obs)?|-n|--lines)\s+(?=-?\d)")
CLEAN_ARGS = frozenset(("--clean", "clean", "--fresh", "fresh", "--from-scratch"))  # `/rigops rebuild --clean`
SAFE_TOKEN_RE = re.compile(r"[a-z0-9_.=+:/-]{1,32}", re.ASCII)


# --- small value types ---------------------------------------------------------------------------------


@dataclass
class _Hits:
    strong: set[str] = field(default_factory=set)
    weak: set[str] = field(default_factory=set)
    trouble: bool = False
    trouble_alone: bool = False  # a plain cry about memory now ("oom-ing pretty bad"), which asks for a look
    relative: str | None = None  # "down" ("halve the jobs", "fewer jobs") or "up" ("more jobs"), no number
    jobs: list[w.Number] = field(default_factory=list)
    lines: list[w.Number] = field(default_factory=list)
    soft: set[str] = field(default_factory=set)  # asked only when said to rigops or in its build's thread
    order: dict[str, int] = field(default_factory=dict)  # action -> the clause it was first asked in
    ignored: list[tuple[str, str]] = field(default_factory=list)  # (clause, why it did not act)
    clean: bool = False  # a rebuild asked to start clean ("rebuild from scratch", "wipe the build dir")

    def merge(self, other: _Hits, at: int) -> None:
        for action in sorted(other.strong | other.weak | other.soft):
            self.order.setdefault(action, at)
        self.soft |= other.soft
        self.strong |= other.strong
        self.weak |= other.weak
        self.trouble |= other.trouble
        self.trouble_alone |= other.trouble_alone
        self.relative = self.relative or other.relative
        self.jobs += other.jobs
        self.lines += other.lines
        self.ignored += other.ignored
        self.clean |= other.clean


# --- public API ----------------------------------------------------------------------------------------


def parse(
    text: str, *, config: Config, context: ThreadContext | None = None, addressed: bool = False,
    channel: str | None = None,
) -> Plan:
    """What a chat message asks for. Chatter gives ``Plan()`` (no steps, no error).

    ``addressed`` means an @mention or a slash command: bare keywords ("status", "kill", "j12") count.
    A request rigops understands but refuses keeps its steps and sets ``error``; the caller then runs nothing.
    """
    plan, _ = read(text, config=config, context=context, addressed=addressed, channel=channel)
    return plan


def read(
    text: str, *, config: Config, context: ThreadContext | None = None, addressed: bool = False,
    channel: str | None = None, taking: frozenset[str] = frozenset(),
) -> tuple[Plan, list[tuple[str, str]]]:
    """The plan, and the clauses that did not act with why (for ``rigops explain``). ``taking``: kinds of
    clause read as requests all the same (for :func:`guess`, whose offer is not doubted: it is only offered).

    A kill or a rebuild the rules read is planned only when the learned reading (``intents_model``) also reads a
    request to act: where it reads a request to refuse, the plan is refused; where it reads no request, nothing
    acts (said to rigops, :func:`guess` then offers the plan as *Did you mean …?*). A look the rules read in a long
    message is not taken where the learned reading surely reads it as asking for nothing (a report with the look's
    words in it). Where the rules read nothing, the learned reading may read the request itself
    (:func:`_proposed`)."""
    return _read(text, _neutral(text, config), config=config, context=context, addressed=addressed,
                 channel=channel, taking=taking)


def _read(
    text: str, neutral: _Neutral, *, config: Config, context: ThreadContext | None, addressed: bool,
    channel: str | None, taking: frozenset[str],
) -> tuple[Plan, list[tuple[str, str]]]:
    """:func:`read` of a message whose neutral reading is made (once, for the rules and the learned reading)."""
    plan, ignored = _read_rules(text, neutral, config=config, context=context, addressed=addressed, channel=channel,
                                taking=taking)
    if not taking and not plan.steps and plan.error is None and plan.question is None and (
            proposed := _proposed(neutral, config=config, context=context, addressed=addressed, channel=channel,
                                  ignored=ignored, readings=frozenset(model.HEADS), offered=False)):
        said = "; ".join(filter(None, (proposed.guess, LEARNED_GUESS)))  # the plan card says so (":mag: a guess")
        return replace(proposed, guess=said), [*ignored, (neutral.normal.text, "learned")]
    if taking or not plan.steps or plan.error is not None or plan.question is not None:
        return plan, ignored
    seen_ = _seen(neutral, addressed or context is not None)
    if not plan.destructive:  # a look: not taken in a report the learned reading surely reads as asking nothing
        # ("FYI free frame buffer on b200 went from 1517 to 337 over the afternoon, before I killed …")
        return (Plan(), [*ignored, (neutral.normal.text, "unsure-look")]) if model.doubts_look(seen_) else (
            plan, ignored)
    doubt = model.doubts_act(seen_)
    if doubt is None or _asked_plainly_after_mention(text, plan, config=config, context=context, channel=channel):
        return plan, ignored
    if doubt == "refuse":
        return replace(plan, error=_unsure_error(plan, config)), ignored
    return Plan(), [*ignored, (neutral.normal.text, "unsure")]


@dataclass(frozen=True)
class _Neutral:
    """A message as the rules and the learned reading read it: normalised, its names, and its neutral text (typos
    mended, slang put plainly, names of the config and build-like names it does not have as ``HOST`` and
    ``BUILD``; see :func:`w.unknown_builds`)."""

    normal: w.Normal
    names: w.Names
    unknown_builds: tuple[str, ...]
    own_slot: bool  # an unknown build-like name stands where the build goes
    masked: str
    plain: str  # the same text with the unknown build-like names as said


def _neutral(text: str, config: Config) -> _Neutral:
    normal = w.normalise_parts(text)
    names = w.find_names(normal.text, config)
    plain = tol.slang(tol.correct(names.masked))
    unknown_builds, own_slot, masked = w.unknown_builds(plain, config)
    return _Neutral(normal, names, unknown_builds, own_slot, masked, plain)


def seen(text: str, *, config: Config, addressed: bool) -> model.Seen:
    """What the learned reading reads of a message: the neutral text the rules read, and what it names."""
    return _seen(_neutral(text, config), addressed)


def _seen(neutral: _Neutral, addressed: bool) -> model.Seen:
    return model.Seen(neutral.masked, addressed, unknown_build=bool(neutral.unknown_builds),
                      unknown_build_slot=neutral.own_slot, unknown_host=bool(neutral.names.unknown))


_NOUN_REBUILD_OF_NAME_RE = re.compile(r"(?:^|[\n.;:!?,] ?|\x01)(?:a |an )?(?:clean|fresh|full|from-scratch)[ -]"
                                      r"(?:re)?build (?P<name>[a-z][\w.+-]{2,40})(?: on HOST)?(?: please)?\s*[.!]*$")
_ONLY_NAMES_RE = re.compile(r"(?:(?:BUILD|HOST)(?: build)?(?:\s*(?:on|@|,|/)\s*|\s+)?)+[?!.]*")
_WORD_RE = re.compile(r"[a-z][a-z'-]+")


LEARNED_GUESS = "what is asked — no rule reads this wording, rigops' learned reading does"

# What the rules read in a clause that no learned reading overrules: it says not to, it is somebody else's, it
# asks how in general or asks nothing (a rhetorical question), it introduces pasted output, or it puts a request
# softly, as advice or a wish (said to rigops, :func:`guess` offers it as it is read; to the channel, a wish).
NOT_PROPOSED = frozenset(("negation", "to-someone", "other-team", "how-to", "rhetorical", "pasted-log", "advice",
                          "hypothetical"))
# A question about how or whether, not asking rigops to show something: no request for the learned reading to read.
_HOW_TO_RE = re.compile(r"\b(?:is it (?:necessary|possible|required|ok|okay|safe|normal|expected)"
                        r"|is there (?:a|some|any) (?:way|tool|option|flag|setting)|do (?:i|we|you) need)"
                        r" to (?!(?:show|display|see|get|check|post|list|print|view|give|tell|send|share|pull|grab"
                        r"|fetch|monitor|watch|know|find out)\b)")
# A musing to the channel ("I wonder what's the status of vllm"): asked of nobody; said to rigops, it asks.
MUSING_RE = re.compile(r"^(?:i (?:wonder|was wondering|am wondering|'m wondering)|(?:just )?wondering|curious)\b")


def _proposed(
    neutral: _Neutral, *, config: Config, context: ThreadContext | None, addressed: bool, channel: str | None,
    ignored: list[tuple[str, str]], readings: frozenset[str], offered: bool,
) -> Plan | None:
    """Where the rules read nothing: the plan of the request the learned reading reads (``model.propose``), one
    step of one of ``readings``, with the names and the count the message says; None when it reads none, when a
    clause says not to or is somebody else's, when the message names what the config does not have (the
    rules refuse those) or nothing of it (outside a thread of rigops'), or when the plan would not be whole (a
    host or a build left to ask for, a count not said as one number).

    A kill or a rebuild that is to run, not only be ``offered``, must be read surely (``model.SURE``), name its
    build, and be the whole of the message: no clause the rules read as anything but a report of what happened
    ("vllm oomed at 16 on node-3. let's go 8 on it"), and a last clause they neither set aside nor read as one
    ("X fails now and then, build with 24 jobs": how it was built)."""
    if any(why in NOT_PROPOSED for _, why in ignored):
        return None
    normal, names, masked = neutral.normal, neutral.names, neutral.masked
    if not addressed and context is None and MUSING_RE.match(masked.replace(w.LEAD_MARK, "").strip()):
        return None
    if _HOW_TO_RE.search(masked):
        return None  # "is it possible to build X on a node without gpus?": how, not a request (not "… to show …")
    if neutral.unknown_builds or names.unknown or w.product_names(masked) or not _WORD_RE.search(masked):
        return None  # a name the rules refuse; nothing said but names (the rules' to read)
    seen_ = _seen(neutral, addressed or context is not None)
    proposal = model.propose(seen_)
    if proposal is None or proposal.reading not in readings:
        return None
    parts = w.clauses(masked)
    if proposal.reading == "act" and not offered and (
            proposal.probability < model.SURE or not names.builds or model.doubts_act(seen_) is not None
            or any(why != "report" for _, why in ignored) or len(ignored) >= len(parts)
            or _last_clause_tells(parts, addressed)
            or _body(parts[-1]) in _set_aside(ignored)):
        return None  # run only a request the rules read nothing else in: "X died at 16 jobs, again at 8 it passed"
        # reports all it says, "… another go at 6 sorted it" tells what helped
    if not names.hosts and not names.builds and normal.quoted:
        quoted = w.find_names(normal.quoted, config)
        names = replace(names, hosts=quoted.hosts, builds=quoted.builds)
    if not names.hosts and not names.builds and context is None:
        return None  # "what the ram situation on my laptop looks like": a host of rigops' is named, or none is meant
    step = Step(proposal.action)
    if proposal.action == "rebuild":
        counts = _proposed_counts(parts)
        if len(counts) > 1 or (not counts and (w.CORE_TALK_RE.search(masked) or _SLOT_NOT_A_NUMBER_RE.search(masked))):
            return None  # which count is meant is not known: a number that is not one, or two; cores talked of; a
            # -j with no number after it ("-jNUM_PHYS_CORES")
        if not counts and not offered and _COUNT_TALK_RE.search(masked):
            return None  # run at the default only where no count is talked of at all
        clean = _asks_clean(masked) or any(w.CLEAN_ASK_RE.match(c.body.removeprefix(w.LEAD_MARK)) for c in parts)
        step = Step("rebuild", jobs=counts[0] if counts else None, clean=clean)
    elif proposal.action == "log" and (
            m := w.LOG_LINES_RE.search(masked) or w.LOG_LINES_OFFERED_RE.search(masked)):
        errors: list[str] = []
        step = Step("log", lines=_checked_lines([w.Number.of(_first_group(m), "{} lines")], errors))
        if errors:
            return None
    plan = _resolve((step,), names, config, context, [], (), channel=channel)
    return plan if plan.error is None and plan.question is None else None


# a lone count after at/with/to, not a size, a share, a time or lines ("one more round at 12 please")
_PROPOSED_COUNT_RE = re.compile(r"\b(?:at|with|to|on|use|using|try)\s+(\d{1,4})\b"
                                r"(?!\s*(?:%|(?:percent|gb?|gib|mb|min|minutes?|h|hours?|lines?|gpus?|cards?)\b))")


def _last_clause_tells(parts: list[w.Clause], addressed: bool) -> bool:
    """The message's last clause, where a request after news of trouble goes, reads as anything but one: a report,
    a story, a supposition ("vllm went belly up again, another go at 6 sorted it")."""
    last = parts[-1].body if parts else ""
    plain = last.removeprefix(w.LEAD_MARK)
    if any(word not in _PARTICIPLES_IN_REQUESTS for word in _PAST_FORM_RE.findall(plain)):
        return True  # "vllm croaked again, bob resurrected it at 4": a verb in the past, in words no table holds
    if (gerund := _GERUND_OPENING_RE.match(plain)) and gerund.group(0) != "string":
        return True  # "…, resurrecting it at 4 now": what someone is doing
    return acts.act_of(plain, addressed=addressed, imperative=last.startswith(w.LEAD_MARK), has_names=True,
                       trouble=False) is not None


_COUNT_TALK_RE = re.compile(r"\d|\$expr|(?<![\w-])-j|\b(?:jobs?|threads?|cores?|cpus?|procs?|processes|parallel\w*"
                            r"|max_jobs|workers?|concurrency|nproc|half|double|twice|fewer|less|more)\b")
_SLOT_NOT_A_NUMBER_RE = re.compile(r"(?<![\w-])-j ?(?![\d ])|\$expr|\b(?:max_jobs|jobs) ?= ?(?!\d)")
_PAST_FORM_RE = re.compile(r"\b[a-z]{2,}[^\We]ed\b")
_GERUND_OPENING_RE = re.compile(r"[a-z]{3,}ing\b")
_PARTICIPLES_IN_REQUESTS = frozenset(("needed", "based", "related", "limited", "called", "named", "killed", "wedged",
                                      "jammed", "patched", "fixed", "pinned", "cached"))


def _proposed_counts(parts: list[w.Clause]) -> list[int]:
    """The counts a message asks for, in the last clause that says a number ("it ran out at -j32. try 16",
    "give it another spin at 4"): read as the rules read counts, or a lone number after at/with/to; [0, 0] when
    that clause says numbers none of which is read as a count (a time, "-i6")."""
    for clause in reversed(parts):
        body = clause.body.removeprefix(w.LEAD_MARK)
        if not any(c.isdigit() for c in body) and not n.JOBS_SERIAL_RE.search(body):
            continue
        counts = ([x.value for x in _read_jobs(body, True)]
                  or [int(m.group(1)) for m in _PROPOSED_COUNT_RE.finditer(body)])
        return list(dict.fromkeys(counts)) if counts and all(MIN_JOBS <= c <= MAX_JOBS for c in counts) else [0, 0]
    return []


def _unsure_error(plan: Plan, config: Config) -> str:
    what = " and ".join(dict.fromkeys(s.action for s in plan.steps if command(s.action).destructive))
    host = plan.host if plan.host in config.hosts else None
    there = f" (builds on {host}: {_builds_listed(host, config)})" if host else ""
    return (f"this reads like a {what} request that cannot be carried out as said: a count given as a "
            f"formula or a size, or a build or host the config does not have?{there} Say it plainly, as in "
            f"`rebuild <build> on <host> -j8`")


def _read_rules(
    text: str, neutral: _Neutral, *, config: Config, context: ThreadContext | None, addressed: bool,
    channel: str | None, taking: frozenset[str],
) -> tuple[Plan, list[tuple[str, str]]]:
    """The rules' reading of :func:`read`, before the learned reading has its say."""
    plan, ignored = _read_whole(text, neutral, config=config, context=context, addressed=addressed, channel=channel,
                                taking=taking)
    if not addressed or (said := _said_after_mention(text)) is None:
        return plan, ignored
    head, tail = said
    whole_failed = not plan.steps or plan.error is not None
    if whole_failed and plan.steps and not (names := w.find_names(w.normalise(tail), config)).hosts \
            and not names.builds:
        return plan, ignored  # refused as one message, and the request names nothing of its own
    said_after = _neutral(tail, config)
    if not whole_failed and plan.destructive:
        asked, why = _read_said_after(head, tail, said_after, config=config, context=context, channel=channel,
                                      taking=taking)
        if _only_looks_beside(plan, asked):
            return asked, _read_remark(head, config, channel) + why  # "Seems memory leak on X. @rigops kill it and
            # show me mem": the remark's news of trouble asks no look of its own beside what follows the mention
        return plan, ignored
    if whole_failed and plan.error is not None and _POINTS_BACK_RE.search(said_after.masked):
        return plan, ignored  # "using `nproc` for -j seems much. @rigops redo X taking half of it": read with it
    asked, why = _read_said_after(head, tail, said_after, config=config, context=context, channel=channel,
                                  taking=taking)
    # "<remark>. @rigops kill sgl-kernel", read as one message, asked nothing or something wrong: what follows the
    # mention is said to rigops, and is read on its own; the remark before it only says what it is about. And
    # "Check the output of `dmesg -T` on gpu01 \n @rigops mem gpu01 meanwhile": a look read in the remark too; what
    # follows the mention is what is asked of rigops, when it asks a look of its own
    if (asked.steps or asked.error) if whole_failed else (
            asked.steps and asked.error is None and not asked.destructive
            and [s.action for s in asked.steps] != [s.action for s in plan.steps]
            and _WORD_RE.search(said_after.masked) is not None):  # not "post smi results @rigops node-3": a name
        return asked, _read_remark(head, config, channel) + why
    return plan, ignored


def _read_said_after(
    head: str, tail: str, neutral: _Neutral, *, config: Config, context: ThreadContext | None, channel: str | None,
    taking: frozenset[str],
) -> tuple[Plan, list[tuple[str, str]]]:
    """What follows the mention (``tail``, its neutral reading ``neutral``), read on its own as said to rigops, about
    what the remark before it (``head``) names, else the thread's."""
    return _read_whole(tail, neutral, config=config, context=_context_of(head, config) or context, addressed=True,
                       channel=channel, taking=taking)


def _only_looks_beside(plan: Plan, asked: Plan) -> bool:
    """The whole message's plan is what follows the mention (``asked``: a kill or a rebuild, read whole, on the same
    build) with looks added before or between its steps, which the remark before the mention brought."""
    if not asked.destructive or asked.error is not None or (asked.host, asked.build) != (plan.host, plan.build):
        return False
    rest = iter(plan.steps)
    if not all(any(s == t for t in rest) for s in asked.steps):
        return False  # not every step asked, in its order
    return len(plan.steps) > len(asked.steps) and all(
        s in asked.steps or not command(s.action).destructive for s in plan.steps)


def _read_whole(
    text: str, neutral: _Neutral, *, config: Config, context: ThreadContext | None, addressed: bool,
    channel: str | None, taking: frozenset[str],
) -> tuple[Plan, list[tuple[str, str]]]:
    normal, names, unknown_builds, own_slot, masked = (neutral.normal, neutral.names, neutral.unknown_builds,
                                                       neutral.own_slot, neutral.masked)
    if not names.hosts and not names.builds and normal.quoted:  # a quote above the request names what it is about
        quoted = w.find_names(normal.quoted, config)
        names = replace(names, hosts=quoted.hosts, builds=quoted.builds, unknown=names.unknown or quoted.unknown)
    names = replace(names, unknown_builds=unknown_builds)
    hits = _Hits()
    whole = acts.message_act(masked, to_someone=_to_someone(text, addressed), addressed=addressed)
    whole = None if whole in taking else whole
    carried: str | None = None  # a supposition or a story that the next joined clause is still part of
    listing = False  # the clauses joined after "… was:" are what it told, up to the next sentence
    negated: set[int] = set()  # the clauses that say what not to do ("don't restart X, rebuild Y instead")
    parts = list(w.clauses(masked))
    for at, clause in enumerate(parts):
        listing = listing and bool(clause.joined)
        if whole:
            hits.ignored.append((clause.body, whole))
            continue
        if at - 1 in negated and clause.joined and _or_between(parts[at - 1].body, clause.body, masked):
            hits.ignored.append((clause.body.removeprefix(w.LEAD_MARK), "negation"))  # "no need to kill it or drop the
            negated.add(at)  # -j": what "or" adds to what is not to be done is not to be done either
            continue
        if clause.body.startswith(w.PASTE_MARK):  # "free -m on HOST gives:" above a code block
            hits.ignored.append((clause.body[1:], "pasted-log"))
            continue
        if at + 1 < len(parts) and parts[at + 1].joined == "and" and CONSEQUENCE_RE.match(parts[at + 1].body):
            hits.ignored.append((clause.body.removeprefix(w.LEAD_MARK), "hypothetical"))  # "restart X at 64 and it
            carried = "hypothetical"  # dies": what it would bring, a warning or a dare
            continue
        if at + 1 < len(parts) and ((parts[at + 1].joined == "and" and not _or_between(clause.body, parts[at + 1].body,
                                                                                   masked) and (
                w.WHAT_HAPPENED_RE.match(parts[at + 1].body) or SHARED_RESULT_RE.match(parts[at + 1].body)
                or RESULT_ONLY_RE.fullmatch(parts[at + 1].body))) or (  # "X rebuild at 12 → success"
                parts[at + 1].joined == "," and RESULT_ONLY_RE.fullmatch(parts[at + 1].body)
                and _joined_by(clause.body, parts[at + 1].body, masked, DASH_SEP_RE))
                or SAID_AFTER_RE.fullmatch(parts[at + 1].body)  # "kill X — done", "kill X, he said, and …"
                or _outcome_after_arrow(clause.body, parts[at + 1].body, masked)):  # "kill X → frees 60G"
            hits.ignored.append((clause.body.removeprefix(w.LEAD_MARK), "report"))  # "run X and it died"
            carried = "report"  # ... and "it died" is the report's own end
            continue
        listing = listing or bool(carried and clause.joined and COMPLEMENT_NEXT_RE.search(parts[at - 1].body))
        asked_after = addressed and carried != "hypothetical" and clause.body.startswith(w.LEAD_MARK)  # "… and
        # I'd like you to show its progress": said to rigops, a lead-in after a report asks
        if carried and clause.joined and not asked_after and (
                carried == "hypothetical" or clause.joined == "and" or listing or not (
                acts.IMPERATIVE_RE.match(clause.body) or clause.body.startswith(w.LEAD_MARK)
                or (addressed and w.ASKED_LEAD_RE.match(clause.body)))):
            hits.ignored.append((clause.body.removeprefix(w.LEAD_MARK), carried))
            continue
        if w.TAKEN_BACK_RE.fullmatch(clause.body.removeprefix(w.LEAD_MARK)) and (hits.strong | hits.weak) & {
                "kill", "rebuild"} and at - max(hits.order.get(a, -9) for a in ("kill", "rebuild")) <= 1:
            # right after the request it takes back: "kill it? nah"; not "abort X. if it doesn't die, … just wait"
            hits.ignored.append((clause.body.removeprefix(w.LEAD_MARK), "negation"))
            hits.strong -= {"kill", "rebuild"}
            hits.weak -= {"kill", "rebuild"}
            hits.jobs = []
            hits.clean = False
            continue
        plain = clause.body.removeprefix(w.LEAD_MARK)
        if (at + 1 < len(parts) and acts.REPORTED_SPEECH_RE.search(plain) and not plain.startswith(("as ", "like "))
                and re.search(re.escape(plain) + r"\s*:", masked)):  # ("as bob said: kill it" agrees, and asks)
            hits.ignored.append((plain, "story"))  # "somebody on the forum said: kill X, then restart it at 2"
            carried, listing = "story", True
            continue
        if (plain in INTERJECTIONS and at + 1 < len(parts)
                and w.NEGATION_RE.match(parts[at + 1].body.removeprefix(w.LEAD_MARK))):
            hits.ignored.append((plain, "negation"))  # "Stop — don't try these:": a cry, then what not to do
            continue
        if at and ((plain == "again" and at + 1 < len(parts) and w.FAILED_NOW_RE.search(parts[at - 1].body)) or (
                not addressed and not clause.body.startswith(w.LEAD_MARK) and w.SETUP_AFTER_FAILURE_RE.match(plain)
                and any(w.FAILED_NOW_RE.search(p.body) for p in parts[:at]))):
            hits.ignored.append((plain, "report"))  # "X test crashes. Again.", "X fails …, build with 40 jobs"
            continue
        if (heading := HEADINGS.get(plain)) and at + 1 < len(parts) and re.search(
                re.escape(plain) + r"\s*:\s*\S", masked):
            hits.ignored.append((plain, heading))  # "Update: X finished fine": the heading of the news below it;
            if heading == "hypothetical":  # "Current plan: restart X at midnight": what is to come, every clause
                carried, listing = heading, True  # the heading holds
            continue
        sentence = [plain, *(p.body for p in itertools.takewhile(lambda p: p.joined, parts[at + 1:]))]
        if clause.question and any(w.ON_ITS_OWN_RE.search(b) for b in (*sentence, ", ".join(sentence))):
            hits.ignored.append((plain, "how-to"))  # "will you kill a build automatically if …?"
            continue
        one = _read_clause(clause.body, addressed, question=clause.question, taking=taking)
        if (one.ignored and one.ignored[-1][1] == "negation") or NOT_THIS_BUILD_RE.fullmatch(plain) or (
                clause.joined and at - 1 in negated and ONLY_A_BUILD_RE.fullmatch(plain)):  # "don't kill X or Y"
            negated.add(at)
        if ("mem" in one.strong and "gpu" in hits.strong and clause.joined in (",", "and") and not one.ignored
                and GPU_LIST_MEMORY_RE.fullmatch(plain)):
            one.strong = (one.strong - {"mem"}) | {"gpu"}  # "gpu temperature, utilization, memory usage": the GPUs'
        hits.merge(one, at)
        carried = one.ignored[-1][1] if one.ignored and one.ignored[-1][1] in CARRIED - taking else None
        if one.ignored and one.ignored[-1][1] == "how-to" and clause.question:
            carried = "how-to"  # "is there a way I can bypass the download and recompile X?": one question
        if one.ignored and one.ignored[-1][1] == "negation" and at + 1 < len(parts) and re.search(
                re.escape(plain) + r"\s*:\s*\n", masked):
            carried, listing = "negation", True  # "don't try these:\n• rebuilding X with -j64": what it lists
        if carried == "hypothetical" and not CONDITION_OPENS_RE.match(one.ignored[-1][0]) and (
                HABIT_RE.search(one.ignored[-1][0])):
            carried = "statement"  # "this crash usually happens when it runs out of memory, try -j6": no condition
            # on what follows, which a request opening it asks for
    if hits.trouble and not (hits.strong | hits.weak) and TROUBLE_RESOLVED_RE.search(masked):
        hits.trouble = hits.trouble_alone = False  # "… OOM-killed, retried it by hand at -j16 and it went through"
    if normal.quoted and not hits.trouble and w.TROUBLE_RE.search(normal.quoted):
        hits.trouble = True  # "> node-3 is swapping" above "confirmed, stop it": the quote is the trouble
    if hits.relative and not hits.jobs and (
            m := n.RELATIVE_THEN_NUMBER_RE.search(masked) or (
                hits.relative == "down" and n.COUNT_ENOUGH_RE.search(masked))):
        hits.jobs.append(w.Number.of(m.group(1), "-j{}"))  # "retry with fewer jobs, say 4": that is the number
        hits.relative = None
    if ("rebuild" in hits.strong | hits.weak and not hits.jobs and not hits.relative and not whole and any(
            p.joined and n.JOBS_SERIAL_RE.fullmatch(p.body.removeprefix(w.LEAD_MARK)) for p in parts)):
        hits.jobs.append(w.Number(1, "-j1"))  # "retry BUILD but serially": how, said after it
    if ("rebuild" in hits.strong | hits.weak and not hits.jobs and not hits.relative and not whole and (after := next((
            m for p in parts if p.joined and (m := _COUNT_AFTER_RE.fullmatch(p.body.removeprefix(w.LEAD_MARK)))),
            None))):
        hits.jobs.append(w.Number.of(_first_group(after), "-j{}"))  # "do BUILD again but with 6": the count, after
    if ("rebuild" in hits.strong | hits.weak and not hits.jobs and not whole
            and (said := _count_said_before(masked, quoted=normal.quoted))):
        hits.jobs.append(said)  # "max job 12 is okay to me for vllm. rebuild with that": the count said before
    if (not (hits.strong | hits.weak) & {"kill", "rebuild"} and not whole and names.builds
            and (do := DO_THAT_RE.search(masked))
            and (said := _one_count(masked[:do.start()]) or _one_count(normal.quoted))):
        # "`--jobs=2` worked for me, so do that", "it only worked with make -j4 — do BUILD like that": the count
        # told before, asked for by pointing back at it (in a quote above too: "> `-j1` lowered the memory use")
        hits.strong.add("rebuild")
        hits.order.setdefault("rebuild", len(parts))
        hits.jobs.append(said)
    if ("rebuild" in hits.strong | hits.weak and not hits.clean and not whole and (do := DO_THAT_RE.search(masked))
            and w.CLEAN_RE.search(before := masked[:do.start()]) and not w.NOT_CLEAN_RE.search(before)
            and not _CLEAN_NOT_NEEDED_RE.search(before)):
        hits.clean = True  # "last time a simple `git clean -x -f` fixed this, do that and rebuild it": the clean told
    if "rebuild" in hits.strong and not hits.clean and not whole and any(
            w.CLEAN_SAID_RE.search(body) and not w.NOT_CLEAN_RE.search(body) and not _CLEAN_NOT_NEEDED_RE.search(body)
            for body in _asked_clauses(parts, hits.ignored)):
        hits.clean = True  # "rebuild X at 12. make sure we are doing a clean rebuild", "…, clean this time"
    if ("rebuild" in hits.strong | hits.weak and not hits.clean and not whole and w.CACHE_SPOILED_RE.search(masked)
            and not w.NOT_CLEAN_RE.search(masked)):
        hits.clean = True  # "the X build cache is corrupt again … rebuild": it starts clean
    if "rebuild" in hits.strong and not hits.jobs and not whole and (m := PARALLEL_CAP_RE.search(masked)):
        hits.jobs.append(w.Number.of(m.group(1), "-j{}"))  # "rebuild X so that at most 4 processes run in parallel"
    if not hits.jobs and not whole and (m := n.JOBS_RETRY_AT_RE.search(masked)) and (
            hits.trouble or len(_COUNT_SAID_RE.findall(masked)) > 1
            or ("rebuild" in hits.strong and not m.group(0).startswith("restart"))):
        # "retry at 16" after trouble, beside another count ("X got it at 32. try it again at 16") or as the
        # rebuild asked ("kill, show mem, retry at 16"): a count, not a time of day ("restart at 3" may be one)
        hits.strong.add("rebuild")
        hits.jobs.append(w.Number.of(_first_group(m), "-j{}"))
    if "rebuild" in hits.strong and not hits.jobs and not whole and (m := _HEDGED_COUNT_RE.search(masked)):
        # "… start it again as you did before, but I would be tempted to use -j 1": the rebuild's count, hedged
        hits.jobs.append(w.Number.of(m.group(1), "-j{}"))
    if (hits.trouble and addressed and not hits.jobs and not whole
            and not (hits.strong | hits.weak) & {"kill", "rebuild"}
            and (m := n.COUNT_ENOUGH_RE.search(masked))):
        hits.strong.add("rebuild")  # said to rigops: "X ran out of memory at -j16. 8 should work"
        hits.order.setdefault("rebuild", len(parts))
        hits.jobs.append(w.Number.of(m.group(1), "-j{}"))
    # a thread rigops acts in talks to rigops; a message about one of its builds or hosts talks about them
    actions = _actions(hits, addressed or context is not None, named=bool(names.hosts or names.builds)
                       and not w.ALTERNATIVES_RE.search(masked))
    # a count beside one given as a formula ("-j8 … or better yet -j $(nproc)", "use that instead of passing -j8") or
    # bounded by one ("16 or the number of cores, whichever is smaller"): which is meant is not known, so refused
    bounded = (w.COUNT_BOUND_BY_FORMULA_RE.search(masked) or _count_beside_formula(masked, hits.jobs)
               or w.ODD_COUNT_RE.search(masked)
               or ("rebuild" in actions and (w.JOBS_SLOT_IN_WORDS_RE.search(masked) or w.JOBS_RANGE_RE.search(masked)
                                             or w.JOBS_MORE_THAN_RE.search(masked)
                                             or _count_alternatives(masked, hits.jobs)
                                             or (not hits.jobs and (w.JOBS_BOUND_RE.search(masked)
                                                                    or w.COUNT_DESCRIBED_RE.search(masked))))))
    # a rebuild whose count was not read, in a message that talks of the cores and says no count anywhere
    core_talk = (w.CORE_TALK_RE.search(masked) if "rebuild" in actions and not hits.jobs and not hits.relative
                 and not w.SAID_COUNT_RE.search(masked) else None)
    if (names.builds or names.hosts) and (
            # not a story told to rigops, every clause of it ("&gt; @rigops rebuild X with 8 \n that's why the cap
            # didn't stick last week: users passing `-j N` …")
            (addressed and (not hits.jobs or bounded) and ("rebuild" in actions or (not actions and not (
                len(hits.ignored) >= len(parts) and all(why in TOLD for _, why in hits.ignored)))))
            or (bounded and "rebuild" in actions) or core_talk) and (
            m := bounded or w.JOBS_AS_FORMULA_RE.search(masked) or w.JOBS_FORMULA_SLOT_RE.search(masked)
            or core_talk or (not actions and _SETS_THE_JOBS_RE.search(masked) and (
                w.COUNT_DESCRIBED_RE.search(masked) or w.JOBS_SLOT_IN_WORDS_RE.search(masked)))):
        # said to rigops, a count given as a formula where the jobs go ("jobs number = nproc", "-j `nproc`",
        # "replace -j12 with the number of logical cores", "bare -j"): refused, never run with an old count
        actions.add("rebuild")
        hits.strong.add("rebuild")
        hits.order.setdefault("rebuild", 0)
        why = {w.ODD_COUNT_RE: " (not a whole, positive number)", w.JOBS_SLOT_IN_WORDS_RE: w.UNSAID_NOTE,
               w.CORE_TALK_RE: w.CORE_TALK_NOTE,
               w.JOBS_RANGE_RE: w.RANGE_NOTE, w.JOBS_BOUND_RE: w.RANGE_NOTE, w.JOBS_MORE_THAN_RE: w.RANGE_NOTE,
               w.COUNT_DESCRIBED_RE: w.UNSAID_NOTE,
               w.COUNT_ALTERNATIVES_RE: w.RANGE_NOTE}.get(m.re, w.UNWORKABLE_NOTE)
        why = w.UNWORKABLE_NOTE if "$expr" in m.group(0) else why  # "jobs = $(nproc)": an expression after all
        hits.jobs = [w.Number(w.UNWORKABLE, f"{shown_clause(m.group(0), 40)}{why}")]
    if not actions and addressed and all(w.SEEMS_STALLED_RE.search(c) or why == "report" for c, why in hits.ignored) \
            and (looks := w.fallback_looks(masked)):
        hits.strong.update(looks)  # said to rigops and read as nothing else: "job status gpu01", "tailable logs?"
        hits.order.update({a: i for i, a in enumerate(looks) if a not in hits.order})
        actions = set(looks)
    if (not actions and not whole and not names.builds and (m := _NOUN_REBUILD_OF_NAME_RE.search(masked))
            and w.product_names(m.group("name"))):
        actions = {"rebuild"}  # "clean rebuild aotriton on HOST": a rebuild of what the config does not have
        hits.strong.add("rebuild")
        hits.order.setdefault("rebuild", 0)
    if not actions and addressed and not whole and _ONLY_NAMES_RE.fullmatch(masked.replace(w.LEAD_MARK, " ").strip()):
        actions = {"status"}  # "@rigops vllm?", "@rigops node-3": how it is doing
        hits.strong.add("status")
        hits.order.setdefault("status", 0)
    if "help" in actions and (len(actions) > 1 or hits.trouble):
        actions.discard("help")  # "help, node-3 is dying": a cry, not a request for the command list
    if ((addressed or context is not None) and not whole and not actions & {"kill", "rebuild"}
            and (cannot := w.CANNOT_DO_RE.search(masked))
            and not any((cannot.group("what") or cannot.group("told")) in clause
                        and why not in ASKING_ALL_THE_SAME for clause, why in hits.ignored)):
        # "can you reset the gpus?", "HOST needs a cold reboot, can you do it?": asked of rigops, and not its to do
        host = names.hosts[0] if names.hosts else (context.host if context else None)
        what = re.sub(r"^an? ", "", cannot.group("what") or cannot.group("told")).replace("HOST", host or "the host")
        return Plan(host=host, error=f"rigops does not {what}: it "
                                     "stops, rebuilds and looks at builds and their hosts; ask whoever runs "
                                     f"{host or 'the host'}"), hits.ignored
    if not actions:
        return Plan(), hits.ignored
    if "log" in actions and "rebuild" not in actions and not hits.lines and (
            m := w.LOG_LINES_OFFERED_RE.search(masked)):
        hits.lines.append(w.Number.of(_first_group(m), "{} lines"))
    jobs, lines, errors = _numbers(hits, actions)
    unknown = bool(names.unknown_builds and _on_hosts(actions) and (own_slot or not names.builds)
                   and not (names.builds and _unknown_only_told(neutral, parts, hits.ignored)))
    if unknown:
        errors.append(_unknown_build_error(names.unknown_builds[0], names, config, context, channel))
    elif actions & {"kill", "rebuild"} and not w.BUILD_TARGET_TOO_RE.search(masked) and (
            (other := w.NOT_A_BUILD_TARGET_RE.search(masked)) or (
                not names.builds and w.PRONOUN_TARGET_RE.search(masked)
                and (other := w.NOT_A_BUILD_SUBJECT_RE.search(masked)))):
        # "stop the vllm server", "kill the jupyter kernel on HOST": a thing that is no build is never taken
        # for one (nor for the host's build), whatever it is named after
        unknown = True
        errors.append(f"rigops stops and rebuilds builds, and {other.group('what')!r} is not one: name the build "
                      f"({_builds_there(names, config, context, channel)})")
    elif (actions & {"kill", "rebuild", "log", "status"} and not names.builds and not names.unknown
          and (named := w.product_names(masked))):
        # "the nightly pytorch build on node-3 is swapping, kill it", "kill the gt4py tests": a name that is no
        # English word, in a request that names no build of the config, is what the request is about: refused
        # with what there is, never taken for the host's own build
        unknown = True
        errors.append(_unknown_build_error(named[0], names, config, context, channel))
    relative = hits.relative if "rebuild" in actions and not hits.jobs else None
    names = _builds_asked(_without_negated_builds(names, parts, negated), parts, hits.ignored)
    plan = _resolve(_steps(actions, jobs, lines, hits.order, clean=hits.clean), names, config, context, errors, (),
                    channel=channel)
    if unknown:  # never a plan for another build than the one named, even a refused one
        plan = replace(plan, build=None, question=None, guess=None)
    return (_relative_jobs(plan, relative, context) if relative else plan), hits.ignored


ONE_MENTION_RE = re.compile(r"<@[UW][A-Z0-9]{2,20}(?:\|[^<>\n]{0,80})?>")


def _asked_plainly_after_mention(
    text: str, plan: Plan, *, config: Config, context: ThreadContext | None, channel: str | None,
) -> bool:
    """The kill or rebuild of ``plan`` is what follows the mention, read on its own, and the learned reading does
    not doubt it there: "my theory is that `make --jobs=$(nproc)` runs out of memory. @rigops restart X with 3
    jobs" — the remark before the mention says what it is about, and its formula or story is not the request."""
    if (said := _said_after_mention(text)) is None:
        return False
    head, tail = said
    neutral = _neutral(tail, config)
    if len(neutral.masked.split()) < model.SHORT or _POINTS_BACK_RE.search(neutral.masked):
        return False  # too short for the learned reading to doubt ("kill clang on b200"); "rebuild X like that"
    asked, _ = _read_said_after(head, tail, neutral, config=config, context=context, channel=channel,
                                taking=frozenset())
    destructive = [s for s in plan.steps if command(s.action).destructive]
    return (asked.error is None and asked.question is None and (asked.host, asked.build) == (plan.host, plan.build)
            and [s for s in asked.steps if command(s.action).destructive] == destructive
            and model.doubts_act(_seen(neutral, True)) is None)


# What follows a mention and points back at the remark before it: "@rigops rebuild X like that".
_POINTS_BACK_RE = re.compile(r"\b(?:like (?:that|this|so|above)|that way|this way|with (?:that|this|those|these)"
                             r"|the same(?: way)?|as (?:above|said|suggested|described|mentioned)|accordingly"
                             r"|that (?:setting|count|number|value|flag)|(?:do|try) (?:that|it)$"
                             r"|half (?:of )?(?:it|that))\b")


def _said_after_mention(text: str) -> tuple[str, str] | None:
    """(the remark before, what follows) when the message's one mention comes after a remark and before a
    request; None otherwise (a mention first, at the end, or several mentions: whose is which is not known)."""
    mentions = list(ONE_MENTION_RE.finditer(text))
    if len(mentions) != 1:
        return None
    head, tail = text[: mentions[0].start()], text[mentions[0].end():]
    if not w.normalise(head).strip() or not w.normalise(tail).strip() or w.MENTION_IN_SENTENCE_RE.search(head):
        return None  # "… before letting @rigops rebuild X": rigops is a word of the sentence, not who it is said to
    return head, tail


def _context_of(head: str, config: Config) -> ThreadContext | None:
    """The host and build a remark is about, as a thread would remember them: one host, or one build (and its
    host when only one host has it)."""
    names = w.find_names(w.normalise(head), config)
    if names.unknown:
        return None
    hosts = [h for h in names.hosts if h in config.hosts]
    builds = list(dict.fromkeys(names.builds))
    if len(hosts) > 1 or len(builds) > 1:
        return None
    host = hosts[0] if hosts else None
    build = builds[0] if builds else None
    if host is None and build is not None:
        owners = [h for h, hc in config.hosts.items() if build in hc.builds]
        host = owners[0] if len(owners) == 1 else None
    if host is not None and build is not None and build not in config.hosts[host].builds:
        build = None
    return ThreadContext(host=host, build=build) if host or build else None


def _read_remark(head: str, config: Config, channel: str | None) -> list[tuple[str, str]]:
    """Why the remark before the mention did not act (for ``rigops explain``)."""
    return _read_whole(head, _neutral(head, config), config=config, context=None, addressed=False, channel=channel,
                       taking=frozenset())[1]


def shown_clause(clause: str, limit: int = 80) -> str:
    """A clause as ``rigops explain`` shows it: the names back as placeholders, cut to ``limit``."""
    text = " ".join(clause.removeprefix(w.LEAD_MARK).replace("HOST", "‹host›").replace("BUILD", "‹build›")
                    .replace("→", "->").split())
    # what was said, quoted back in plain printable ASCII (a control character or a stray letter is a "?")
    text = "".join(c if (c.isprintable() and c.isascii()) or c in "‹›" else "?" for c in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


ONLY_A_BUILD_RE = re.compile(r"(?:the )?BUILD(?: build)?(?: on HOST)?")
NOT_THIS_BUILD_RE = re.compile(r"(?:not|no|never mind|nvm|forget|leave|skip) (?:the )?BUILD(?: build| alone| one)?")


def _without_negated_builds(names: w.Names, parts: list[w.Clause], negated: set[int]) -> w.Names:
    """ "don't restart X, rebuild Y instead", "not X — kill Y", "never mind X, kill Y": the build a clause says not
    to touch is not the one asked for, when the rest of the message names exactly one other."""
    if len(names.builds) < 2 or not negated or names.unknown_builds:
        return names
    if (by_clause := _mentions_by_clause(names, parts)) is None:
        return names  # the clauses do not hold every mention as found: keep the refusal
    asked = {name for at, said in enumerate(by_clause) if at not in negated for name, _ in said}
    return replace(names, builds=tuple(asked)) if len(asked) == 1 else names


def _mentions_by_clause(names: w.Names, parts: list[w.Clause]) -> list[list[tuple[str, int]]] | None:
    """The builds each clause names, with where in its body: each ``BUILD`` of the masked clauses is the next of
    ``names.build_mentions``; None when the clauses do not hold every mention as found."""
    found = [[m.start() for m in re.finditer(r"\bBUILD\b", _body(part))] for part in parts]
    if sum(map(len, found)) != len(names.build_mentions):
        return None
    mentions = iter(names.build_mentions)
    return [[(next(mentions), at) for at in where] for where in found]


def _builds_asked(names: w.Names, parts: list[w.Clause], ignored: list[tuple[str, str]]) -> w.Names:
    """ "stop flash-attn so sgl-kernel can finish", "X seems stuck too (same as the vllm one this morning). kill it":
    a build named only in a clause set aside, in an aside or in the request's reason is not the one asked for, when
    the request names exactly one other."""
    if len(names.builds) < 2 or names.unknown_builds or (by_clause := _mentions_by_clause(names, parts)) is None:
        return names
    aside = _set_aside(ignored)
    asked: set[str] = set()
    told_of: set[str] = set()
    for part, said in zip(parts, by_clause, strict=True):
        body = _body(part)
        reason = w.REASON_RE.search(body)
        by_the_way = [m.span() for m in acts.ASIDE_RE.finditer(body)] + (
            [(reason.start(), len(body))] if reason else [])
        for name, at in said:
            if not any(start <= at < end for start, end in by_the_way):
                (told_of if body in aside else asked).add(name)
    # the request names none: the one its news is about ("X seems stuck too (same as the Y one). kill it")
    one = asked or told_of
    return replace(names, builds=tuple(one)) if len(one) == 1 else names


# What a clause set aside tells rather than asks, however it is put.
TOLD = frozenset(("story", "report", "other-team", "negation", "hypothetical", "pasted-log"))
INTERJECTIONS = frozenset(("stop", "wait", "hold on", "hold up", "stop stop", "whoa", "careful", "warning"))
# A heading that opens a message ("Update: …", "Plan: …"), and what the clauses under it are: news, or what is to come.
HEADINGS = {**dict.fromkeys(("update", "updates", "status update", "news", "edit", "fyi", "psa", "note", "heads up"),
                            "report"),
            **dict.fromkeys(("plan", "the plan", "current plan", "my plan", "our plan", "todo", "to do", "to-do",
                             "next steps", "next step", "tomorrow", "later", "proposal", "proposed"), "hypothetical")}
CARRIED = frozenset(("hypothetical", "story", "report", "advice", "other-team", "statement"))
# A clause that ends where what it tells is said next: "the quick fix is usually: bump the timeout and lower the
# jobs" — what follows the colon is the story's or the advice's own, even when it reads as a request.
# The trouble told is over: "retried it by hand and it went through", "doubling the RAM fixed it".
TROUBLE_RESOLVED_RE = re.compile(
    r"\b(?:it|that|this|which|and) (?:went through|fixed it|did the trick|solved it|succeeded)\b"
    r"|\b(?:fixed|solved|resolved) (?:it|the (?:issue|problem))\b(?! (?:yesterday|before|last|earlier|once))"
    r"|\b(?:works|builds) (?:fine )?now\b")
# A memory item in a list that began with the GPUs: "gpu temperature, utilization, memory usage and processes".
GPU_LIST_MEMORY_RE = re.compile(r"(?:and )?(?:the |their |its )?(?:memory|mem|vram) (?:usage|utili[sz]ation|used"
                                r"|use|in use|allocated|allocation)(?: (?:on|of) HOST)?")
COMPLEMENT_NEXT_RE = re.compile(r"\b(?:is|are|was|were|be|usually|typically|generally|normally|always|often)$")
TO_SOMEONE_RE = re.compile(r"^\s*<@[UW][A-Z0-9]{2,20}(?:\|[^>]{0,80})?>")


def _to_someone(text: str, addressed: bool) -> bool:
    """The message opens by naming a person, and not rigops: what it asks, it asks of them."""
    return not addressed and bool(TO_SOMEONE_RE.match(text))


def _unknown_build_error(name: str, names: w.Names, config: Config, context: ThreadContext | None,
                         channel: str | None) -> str:
    """A build the config does not know is never swapped for one it does: the refusal names what there is on
    the host the request is about (found as for any request, the unknown build aside)."""
    host, builds = _what_there_is(names, config, context, channel)
    said = f"no build {name!r} on {host} (builds there: {builds})" if host else \
        f"no build {name!r} in the config (builds: {builds})"
    close = sorted(b for hc in config.hosts.values() for b in hc.builds if tol.one_edit(name.lower(), b.lower()))
    return f"{said} — did you mean {' or '.join(dict.fromkeys(close))}?" if close else said


def _builds_there(names: w.Names, config: Config, context: ThreadContext | None, channel: str | None) -> str:
    host, builds = _what_there_is(names, config, context, channel)
    return f"builds on {host}: {builds}" if host else f"builds: {builds}"


def _what_there_is(names: w.Names, config: Config, context: ThreadContext | None,
                   channel: str | None) -> tuple[str | None, str]:
    """The host a refused request is about (found as for any request, its builds aside) and the builds there; no
    host and every build in the config when none is found."""
    mapped = config.slack.channel_hosts.get(channel or "", ())
    host = _resolve_host(replace(names, builds=()), config, context, [], [], mapped=mapped)
    if host is not None and host in config.hosts:
        return host, _builds_listed(host, config)
    return None, ", ".join(sorted({b for hc in config.hosts.values() for b in hc.builds})) or "none"


def _builds_listed(host: str, config: Config) -> str:
    """The builds configured on ``host``, as a refusal lists them."""
    return ", ".join(config.hosts[host].builds) or "none"


def retarget(plan: Plan, *, host: str, build: str | None, config: Config, context: ThreadContext | None = None,
             guess: str | None = None) -> Plan:
    """The plan with the host (and build) a question was answered with, or that rigops inferred (``guess`` says
    from what), resolved as if the request had named them."""
    names = w.Names(hosts=(host,), builds=(build,) if build else ())
    resolved = _resolve(plan.steps, names, config, context, [], plan.warnings)
    return replace(resolved, guess=guess if not resolved.error else None)


def names_in(text: str, *, config: Config) -> w.Names:
    """The config's host and build names a message names (for an answer to a question)."""
    return w.find_names(w.normalise(text), config)


def parse_command(text: str, *, config: Config, context: ThreadContext | None = None,
                  channel: str | None = None) -> Plan:
    """``/rigops <subcommand> [host] [build] [-jN|N]``; host and build may come in either order."""
    words = CMD_JOIN_RE.sub(r"\1", w.normalise(text)).split()
    if words and words[0] in ("/rigops", "rigops"):
        words = words[1:]
    if (not words and not text.strip()) or (words and words[0] in ("help", "-h", "--help", "?")):
        return Plan(steps=(Step("help"),))
    row = by_word(words[0]) if words else None
    if row is None or not row.is_action:  # an emoji alone reads as no words: "/rigops 💥" is unknown too
        known = ", ".join(step_names())
        return Plan(error=f"unknown subcommand {_show(words[0] if words else text.strip())} (subcommands: {known})")
    action: Action = row.name
    args = words[1:]
    clean = "clean" in row.params and any(a in CLEAN_ARGS for a in args)
    if clean:
        args = [a for a in args if a not in CLEAN_ARGS]
    hosts, builds, number, errors = _command_args(args, action, config)
    jobs = _checked_jobs([number] if number is not None and "jobs" in row.params else [], errors)
    lines = _checked_lines([number] if number is not None and "lines" in row.params else [], errors)
    names = w.Names(hosts=tuple(hosts), builds=tuple(builds))
    return _resolve(_steps({action}, jobs, lines, clean=clean), names, config, context, errors, (),
                    channel=channel)


_HEDGED_COUNT_RE = re.compile(r"\b(?:i|we)(?:'d| would)(?: be tempted to| probably| just| rather| maybe)?"
                              r" (?:use|go with|try|do|pick|suggest|recommend)(?: it)? (?:with |at )?(?:-j ?)?(\d{1,4})"
                              r"(?: jobs?)?(?![\w.%]|\s*(?:gb|g|gib|mb|%|min|minutes|h|hours)\b)")
_COUNT_SAID_RE = re.compile(r"\bat \d{1,4}\b(?! ?(?:am|pm|%|gb?|gib|mb)\b)|(?<![\w-])-j ?\d{1,4}\b"
                            r"|\b\d{1,4} (?:jobs|threads)\b")


def _unknown_only_told(neutral: _Neutral, parts: list[w.Clause], ignored: list[tuple[str, str]]) -> bool:
    """The builds the config does not have are named only in clauses set aside as a story or a report, beside a
    request that names one it has: "could you rerun X? … (I've only merged main and the protobuf rebuild)"."""
    before = w.clauses(neutral.plain)  # the clauses, the unknown names as said
    if len(before) != len(parts):
        return False
    aside = _set_aside(ignored)
    return not any(re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", said.body)
                   for said, part in zip(before, parts, strict=True)
                   if _body(part) not in aside for name in neutral.unknown_builds)


def _asked_clauses(parts: list[w.Clause], ignored: list[tuple[str, str]]) -> list[str]:
    """The clauses of a message the rules did not set aside as a story, a report, advice and so on."""
    aside = _set_aside(ignored)
    return [body for c in parts if (body := _body(c)) not in aside]


def _set_aside(ignored: list[tuple[str, str]]) -> set[str]:
    """The clauses the rules set aside (``ignored``), as :func:`_body` gives them."""
    return {body.removeprefix(w.LEAD_MARK) for body, _ in ignored}


def _body(clause: w.Clause) -> str:
    """A clause's words, without the mark its lead-in left."""
    return clause.body.removeprefix(w.LEAD_MARK)


def _relative_jobs(plan: Plan, direction: str, context: ThreadContext | None) -> Plan:
    """"halve the jobs", "more jobs": relative to the -j of the thread's last build of the same host and build;
    without one, the rebuild keeps its default and says why."""
    last = context.jobs if context is not None and (context.host, context.build) == (plan.host, plan.build) else None
    if plan.error or last is None:
        return replace(plan, warnings=(*plan.warnings, RELATIVE_JOBS_WARNING))
    jobs = half_jobs(last) if direction == "down" else min(MAX_JOBS, last * 2)
    steps = tuple(replace(s, jobs=jobs) if s.action == "rebuild" else s for s in plan.steps)
    how = "half" if direction == "down" else "twice"
    return replace(plan, steps=steps, warnings=(*plan.warnings, f"-j{jobs}: {how} the -j{last} of this thread's "
                                                                  "last build"))


# --- reading one clause --------------------------------------------------------------------------------


GUESSABLE = frozenset(("hypothetical", "advice"))  # what, said to rigops, may be a request put softly
ASKING_ALL_THE_SAME = frozenset(("statement", "report"))  # "HOST needs a reboot" (then "can you do it?")


def guess(text: str, *, config: Config, context: ThreadContext | None = None,
          channel: str | None = None) -> Plan | None:
    """For a message to rigops that asked for nothing: the plan it would be if its suppositions and advice
    were requests ("@rigops maybe we could drop vllm to -j8"), to offer as *Did you mean …?*; None when there
    is none, or when it was a negation, a story or said to someone else."""
    if _to_someone(text, addressed=False):  # opened by naming a colleague: theirs to do, even with rigops named
        return None
    neutral = _neutral(text, config)
    plan, ignored = _read(text, neutral, config=config, context=context, addressed=True, channel=channel,
                          taking=GUESSABLE)
    if not plan.steps and plan.error is None and plan.question is None:
        # nothing the rules read: the request the learned reading reads, kill and rebuild too (only offered)
        return _proposed(neutral, config=config, context=context, addressed=True, channel=channel, ignored=ignored,
                         readings=frozenset(model.HEADS), offered=True)
    return plan if plan.steps and plan.error is None and plan.question is None else None


def _read_clause(body: str, addressed: bool, *, question: bool = False,
                 taking: frozenset[str] = frozenset()) -> _Hits:
    hits = _Hits()
    if addressed and (asked := w.as_asked(body.removeprefix(w.LEAD_MARK))):
        body = w.LEAD_MARK + asked  # "I suggest killing X", "any chance you could rerun X": asked all the same
    if addressed and (this_time := _THIS_TIME_RE.match(body.removeprefix(w.LEAD_MARK))):
        body = body.removeprefix(w.LEAD_MARK)[this_time.end():]  # "retry X, this time with -j2": how, this time
    opens = body.removeprefix(w.LEAD_MARK)
    if addressed:
        opens = w.ASKED_LEAD_RE.sub("", opens)
    starts_imperative = body.startswith(w.LEAD_MARK) or bool(acts.IMPERATIVE_RE.match(opens))
    # A request's reason does not make it a story: "kill the stuck job so that it doesn't come back later"
    main = w.REASON_RE.split(body, maxsplit=1)[0] if starts_imperative else body
    if starts_imperative:  # "rebuild X with fewer jobs than last time": a comparison, not a story
        main = _COMPARED_TO_BEFORE_RE.sub(" ", main)
    main = _GIVEN_NOW_RE.sub("", main)  # "… check the vram on HOST now that BUILD is finished": what is the case
    if starts_imperative:
        body = _GIVEN_NOW_RE.sub("", body)  # "rerun it now that it's quiet": the request, and why now
    if addressed and (said := _PLAN_LEAD_RE.match(opens)) and n.JOBS_TO_RE.match(rest := opens[said.end():]) and not (
            w.NARRATIVE_RE.search(rest) or _BY_ONESELF_RE.search(rest)):
        body = main = opens = rest  # said to rigops, "… gonna scale it up to 100 jobs to do so": how to do what it asks
        starts_imperative = True
    if acts.LATER_CONDITION_RE.search(opens):  # "next time X OOMs, …", "… if it dies again": not now, even asked
        hits.ignored.append((body, "hypothetical"))
        return hits
    if acts.HABIT_TIME_RE.search(opens):  # "rebuild X at 8 on fridays": what is done as a habit, told
        hits.ignored.append((body, "story"))
        return hits
    if DONE_RE.search(opens):  # "vllm -j4 restart done": told as done
        hits.ignored.append((body, "report"))
        return hits
    if w.NARRATIVE_RE.search(main):
        hits.ignored.append((body, "story"))
        return hits
    if not starts_imperative and w.DESCRIPTION_RE.search(main):
        hits.ignored.append((body, "statement"))  # "the script is supposed to cap it at 8": how a thing works
        return hits
    subject = acts.VERB_AS_SUBJECT_RE.match(opens) or acts.GERUND_SUBJECT_RE.match(opens)
    if subject and not w.TROUBLE_RE.search(opens):
        hits.ignored.append((body, "statement"))  # "tail shows the last 500 lines": what the tool did
        return hits
    if addressed:
        body = w.ASKED_LEAD_RE.sub("", body)
        main = w.ASKED_LEAD_RE.sub("", main)
    lead = body.startswith(w.LEAD_MARK)
    imperative = bool(acts.IMPERATIVE_RE.match(body)) or lead
    body = body.removeprefix(w.LEAD_MARK)
    main = main.removeprefix(w.LEAD_MARK)
    if addressed and lead:  # "would you | be so kind as to kill it": the lead-in after the one the split took
        body, main = w.ASKED_LEAD_RE.sub("", body), w.ASKED_LEAD_RE.sub("", main)
    imperative |= addressed and _is_bare(n.JOBS_SERIAL_RE, main)  # "… run it again, one command at a time"
    act = acts.act_of(main, addressed=addressed, imperative=imperative, has_names=acts.names_ours(body),
                      trouble=bool(w.TROUBLE_RE.search(body) or w.GPU_OOM_RE.search(body)))
    if act is not None and act not in taking:
        hits.ignored.append((body, act))
        return hits
    if act is not None:  # read as a request put softly: "we could check memory" asks "check memory"
        body = acts.SOFT_LEAD_RE.sub("", body)
    if w.GPU_OOM_RE.search(body):
        hits.strong.add("gpu")
        body = w.GPU_OOM_RE.sub(" ", body).strip()
    hits.trouble = bool(w.TROUBLE_RE.search(body))
    hits.trouble_alone = hits.trouble and _bare_trouble(body)
    _read_lookups(body, addressed, hits)
    if question or acts.QUESTION_START_RE.match(body):
        for action, rx in w.LOOK_QUESTIONS:
            if rx.search(body):
                hits.strong.add(action)
    if not w.NEGATION_RE.search(main) and (addressed or not w.DELIBERATION_RE.search(main)):
        _read_kill(body, addressed, hits, lead=lead)
        if "kill" not in hits.strong | hits.weak and main != body:  # "kill it before the box freezes"
            _read_kill(main.strip(), addressed, hits, lead=lead)
        _read_rebuild(body, addressed, hits)
        # "wipe the build dir, then rebuild", "BUILD: remove the build directory then …": with the rebuild only
        lead_names = NAMES_LEAD_RE.match(body)
        hits.clean |= bool(w.CLEAN_ASK_RE.match(body[lead_names.end():] if lead_names else body))
    return hits


def _read_lookups(body: str, addressed: bool, hits: _Hits) -> None:
    """The read-only actions: chart, those of w.LOOK_REQUESTS (mem, status, log, gpu, …), hosts/help when
    addressed."""
    if w.CHART_RE.search(body):
        hits.strong.add("chart")
        body = w.CHART_RE.sub(" ", body).strip()
    for action, rx in w.LOOK_REQUESTS:
        if rx.search(body):
            hits.strong.add(action)
    if addressed and (tool := w.ADDRESSED_LOOK_TOOL_RE.match(body)):
        named = tool.group("tool")
        hits.strong.add("gpu" if named.startswith("nvidia") else "mem" if named.startswith("free") else "log")
    if (verb := w.LOOK_VERB_RE.match(body)) and not w.CHART_RE.search(body):
        for action, rx in w.LOOK_OBJECTS:
            if rx.search(body, verb.end()):
                hits.strong.add(action)
                break
    bare = " ".join(w.FILLER_RE.sub(" ", body).replace("(", " ").replace(")", " ").split())  # "log (last 30)"
    if bare not in w.BARE_WORDS and (nameless := w.TRAILING_NAMES_RE.sub("", bare)) in w.BARE_WORDS:
        bare = nameless  # "… and VRAM usage on HOST": the look's noun, then where
    if bare in w.BARE_WORDS:
        hits.strong.add(w.BARE_WORDS[bare])
    elif m := w.LOG_BARE_N_RE.fullmatch(bare):
        hits.strong.add("log")
        hits.lines.append(w.Number.of(_first_group(m), "{} lines"))
    elif addressed and bare in w.ADDRESSED_BARE_WORDS:
        action = w.ADDRESSED_BARE_WORDS[bare]
        hits.strong |= {"kill", "rebuild"} if action == "restart" else {action}
    if "log" in hits.strong and not hits.lines and (m := w.LOG_LINES_RE.search(body)):
        hits.lines.append(w.Number.of(_first_group(m), "{} lines"))


# Words that may come before a request verb in the middle of a clause: "b200 is dying please kill the build",
# "someone kill it", "we need to stop the build". Anything else before the verb makes it part of a sentence
# about something ("invoked the oom killer to kill the build").
REQUEST_PREFIX_RE = re.compile(
    r"^(?:(?:please|pls|just|now|quickly|immediately|asap|so|then|and|someone|somebody|anyone|can|could|would"
    r"|will|you|u|we|need|needs|to|have|got|gotta|must|should|let's|lets|go|ahead|time|i|want|really"
    r"|seriously|urgently|kindly|me|for|HOST|HOST's|BUILD|on|@|guys|hey|yo|rigops|bot|also|ok|okay|pretty"
    r"|oh|ah|hm+|ugh|right|fine|yes|yeah|yep|sure|alright|force|forcibly|hard|best to|better to|try)\b[\s,:]*)*$"
)


def _at_request(body: str, m: re.Match[str] | None) -> bool:
    return m is not None and bool(REQUEST_PREFIX_RE.match(body[: m.start()]))


def _read_kill(body: str, addressed: bool, hits: _Hits, *, lead: bool = False) -> None:
    if (_at_request(body, w.KILL_TARGET_RE.search(body)) or w.KILL_TOOL_RE.match(body) or w.KILL_PRONOUN_RE.match(body)
            or (addressed and w.ADDRESSED_KILL_RE.match(body))):
        hits.strong.add("kill")
    elif w.KILL_WEAK_RE.match(body):
        (hits.strong if lead else hits.weak).add("kill")  # "can you stop it" asks; a bare "stop it" may not


def _read_rebuild(body: str, addressed: bool, hits: _Hits) -> None:
    jobs = _read_jobs(body, addressed)
    strong = bool(jobs or w.REBUILD_OBJECT_RE.match(body) or w.REBUILD_BARE_RE.match(body)
                  or w.REBUILD_AGAIN_RE.match(body) or w.REBUILD_NOUN_RE.match(body)
                  or _at_request(body, w.REBUILD_TARGET_RE.search(body))
                  or (addressed and w.ADDRESSED_REBUILD_RE.match(body)))
    weak = bool(w.REBUILD_WEAK_RE.match(body))
    if weak and not strong and not addressed and w.AGAIN_ONLY_RE.fullmatch(body):
        hits.soft.add("rebuild")  # a bare "again": only to rigops, or in its build's thread
        return
    if not jobs and (rel := n.RELATIVE_JOBS_RE.search(body)):
        imperative = rel.start() == 0  # "halve the jobs", "lower -j to 16"; not "we need fewer jobs"
        strong, weak = strong or imperative, True
        if imperative and rel.group(1):
            jobs = [w.Number.of(rel.group(1), "{} jobs")]
        else:
            hits.relative = "up" if rel.group(0).split()[0] in n.MORE_WORDS else "down"
    if not (strong or weak):
        return
    bucket = hits.strong if strong else hits.weak
    bucket.add("rebuild")
    if w.RESTART_RE.search(body):
        bucket.add("kill")
    hits.jobs += jobs
    hits.clean |= _asks_clean(body)


def _asks_clean(body: str) -> bool:
    """The clause asks for a clean start ("rebuild from scratch", "a fresh build", "wipe the build dir"),
    not for the opposite ("rebuild, no need to clean")."""
    return bool(w.CLEAN_RE.search(body) and not w.NOT_CLEAN_RE.search(body))  # CLEAN_ASK_RE: _read_clause


def _read_jobs(body: str, addressed: bool) -> list[w.Number]:
    """Parallelism numbers that the clause asks for (not ones it merely mentions)."""
    body = _MAKE_SURE_USES_RE.sub(r"make \1 use ", body)  # "make sure the X build uses 3 cores or less": it asks
    body = _ABOUT_A_COUNT_RE.sub("", body)  # "at around 8", "at ~8", "at 8ish": the count, said loosely
    found: dict[int, w.Number] = {}  # by where the number starts, so "with 16 jobs" counts once
    request = n.REQUEST_ANY_RE.search(body)
    asked_from = request.end() if request else len(body) + 1  # a number after this is asked for
    if n.REQUEST_START_RE.match(body):
        asked_from = 1
    tables = ((n.JOBS_STRONG_RE, "-j{}", True), (n.JOBS_BARE_J_RE, "-j{}", addressed),
              (n.JOBS_UNIT_RE, "{} jobs", addressed or _is_bare_jobs(body)))
    for rx, template, alone_is_enough in tables:
        for m in rx.finditer(body):
            if _asks_for_jobs(body, m, asked_from, alone_is_enough, addressed=addressed):
                found.setdefault(m.start(1 + _group_index(m)), w.Number.of(_first_group(m), template))
    for m in n.JOBS_SERIAL_RE.finditer(body):
        if m.group(0).endswith(" at a time") and not addressed:
            continue  # "… then the computer freezes. Build one file at a time": advice, unless said to rigops
        just_before = body[max(0, m.start() - n.JOBS_LOOKBACK): m.start()]
        if (m.start() >= asked_from or (addressed and (NAMES_LEAD_RE.fullmatch(body[:m.start()])
                                                       or _is_bare(n.JOBS_SERIAL_RE, body)))) and not (
                n.JOBS_NOT_NEW_RE.search(just_before)):
            found.setdefault(m.start(), w.Number(1, "-j1"))
    if n.CHANGE_START_RE.match(body) or addressed:
        for m in n.JOBS_FROM_TO_RE.finditer(body):
            for key in [k for k in found if m.start() <= k < m.end()]:
                del found[key]  # "from 4 jobs to 2": the 4 is the old value
            found.setdefault(m.start(1), w.Number.of(m.group(1), "-j{}"))
    for m in (*n.JOBS_WITH_RE.finditer(body), *n.JOBS_TO_RE.finditer(body), *n.JOBS_AT_RE.finditer(body),
              *n.JOBS_DESCRIBED_THEN_SAID_RE.finditer(body), *n.JOBS_ON_RE.finditer(body),
              *n.JOBS_BACK_TO_RE.finditer(body)):
        if m.re is n.JOBS_WITH_RE and body[:m.start()].endswith("to ") and not n.REQUEST_ANY_RE.search(
                body[:m.start()]):
            continue  # "X still takes 10 minutes to compile with 32 cores": what it takes, not what is asked
        if not n.JOBS_STORY_AFTER_RE.match(body, m.end()) or _TOO_RE.match(body, m.end()):  # "… on -j4 too"
            found.setdefault(m.start(1 + _group_index(m)), w.Number.of(_first_group(m), "-j{}"))
    if not found and (at := n.NAME_AT_COUNT_RE.match(body)) and (addressed or PLEASE_RE.search(at.group(0))):
        # "@rigops vllm at 4"; to the channel only with a please: "cc1plus killed again. llama-cpp at 4 pls"
        found[at.start(1)] = w.Number.of(at.group(1), "-j{}")
    change = n.JOBS_CHANGE_RE.match(body) if not found else None
    if change is not None and not n.JOBS_STORY_AFTER_RE.match(body, change.end()):
        found[change.start(1 + _group_index(change))] = w.Number.of(_first_group(change), "-j{}")
    return list(found.values())


# Said to rigops with no request verb, what sets a build's jobs: "keep X limited to 1/16th of the cores", "X
# MAX_JOBS: fall back to CPU count minus two".
_SETS_THE_JOBS_RE = re.compile(r"\b(?:keep|limit|cap|restrict|set|fall back|use|give|run|throttle|bound|pin|drop"
                               r"|lower|reduce|bump|raise)\b")
_COUNT_AFTER_RE = re.compile(r"(?:but |only |just |and )?(?:(?:with|using|on) (?:-j ?)?(\d{1,4})(?: jobs?| threads?)?"
                             r"|at (?:-j ?(\d{1,4})|(\d{1,4}) (?:jobs?|threads?)))"  # not "at 5": a time, maybe
                             r"(?: this time| instead| please| now| then)?[.!]*")
_TOO_RE = re.compile(r"\s+(?:too|as well)\s*[.!]*$")
_ABOUT_A_COUNT_RE = re.compile(r"(?:(?<=\bat )|(?<=\bwith )|(?<=\bto )|(?<=-j ))(?:around|about|roughly|approximately"
                               r"|approx\.?|circa|like|~) ?(?=\d{1,4}\b)|(?<=\d)-?ish\b|(?<=\bat )~|(?<=\bwith )~")
_GIVEN_NOW_RE = re.compile(r"\s(?:now that|given that|seeing as|seeing that)\s.*")
_THIS_TIME_RE = re.compile(r"^(?:but |and |only )?this time(?: around| round)?,? (?=with |at |using |-j|j\d|max_jobs"
                           r"|(?:only |just )?\d|make_jobs|cmake_build_parallel_level|jobs)")


# A supposition that governs the clause after it opens with its condition: "if it dies again, kill it", "once it
# finishes, rebuild X"; "this crash happens when it runs out of memory, try -j6" is a statement, and "try" asks.
CONDITION_OPENS_RE = re.compile(r"^(?:if|when|whenever|once|in case|should|unless|as soon as|after|before|until|till"
                                r"|suppose|supposing|assuming|what if|say|let's say|imagine|even if|in the event)\b")


HABIT_RE = re.compile(r"\b(?:usually|typically|often|always|normally|generally|tends? to|happens|happened|occurs)\b")


_CLEAN_NOT_NEEDED_RE = re.compile(r"\bclean\b[^,.;]{0,30}\b(?:not needed|isn't needed|unnecessary|not necessary"
                                  r"|didn't help|did not help|won't help)")
_MAKE_SURE_USES_RE = re.compile(r"^(?:please |pls )?(?:make sure|ensure)(?: that)? ((?:the )?(?:BUILD|it)(?: build)?)"
                                r" (?:only )?(?:uses|runs with|builds with|compiles with) ")


# A plan said to rigops, which it is asked to carry out: "gonna scale it up to 100 jobs", "we need to drop it to 4".
_PLAN_LEAD_RE = re.compile(r"^(?:(?:i|we)(?:'m|'re| am| are)? )?(?:gonna|going to|gotta|got to|need to|have to|wanna"
                           r"|want to|will|'ll|let's|lets) ")


_BY_ONESELF_RE = re.compile(r"\b(?:myself|ourselves|by hand|manually|locally|on my (?:laptop|machine|box))\b")


# A rebuild that takes its count from what was said before it: "rebuild with that", "restart it that way".
WITH_THAT_RE = re.compile(r"\b(?:rebuild|restart|rerun|retry|run|build|start|relaunch|redo|kick)\b[^.?!]{0,30}?"
                          r"\b(?:with (?:that|those|it|this)(?: (?:count|number|value|setting))?|that way|like that"
                          r"|at that|using that|with that many)\b")
_COUNT_OF_JOBS_RE = re.compile(r"\b(?:run|only run|running|allow|use|keep it to) (\d{1,4})"
                               r" (?:of (?:these|the|those) )?(?:jobs|processes|compiles|threads)\b"
                               # "limiting it to something like 12 ensured reliable builds": the count told
                               r"|\b(?:limiting|capping|setting|lowering|dropping) (?:it|BUILD|the build|the jobs|-j)"
                               r" to (?:something like |around |about |roughly |~)?(\d{1,4})\b")


# How many run at once, said in a rebuild's purpose: "so that at most 4 processes will run in parallel".
PARALLEL_CAP_RE = re.compile(r"\b(?:at most|no more than|max(?:imum)?(?: of)?|only|just) (\d{1,4})"
                             r" (?:processes|procs|jobs|compiles|compilers|compile jobs|threads|workers)"
                             r"(?: (?:will |can |may |should |would )?(?:run|go|be running|be built|build))?"
                             r" (?:in parallel|at once|at a time|concurrently|simultaneously)\b")


# A command substituted that computes no count ("-j2 $(touch /tmp/x)"): beside a count, no formula for it.
_NOT_A_COUNT_RE = re.compile(r"\$\((?!\s*(?:nproc|getconf|expr|\(|echo|python|sysctl|lscpu|grep|cat|awk|free))"
                             r"[^)]{0,200}\)")
_SENTENCE_END_RE = re.compile(r"(?<!\.)[.;?!](?!\.)(?:\s|$)|\n")


def _count_alternatives(masked: str, counts: list[w.Number]) -> re.Match[str] | None:
    """The count read, offered with another: "rebuild at 8 or 10" (not "it oomed at 16 or 32 … rebuild at 8")."""
    read = {c.value for c in counts}
    return next((m for m in w.COUNT_ALTERNATIVES_RE.finditer(masked)
                 if int(m.group("first") or m.group("listed")) in read), None)


def _count_beside_formula(masked: str, counts: list[w.Number]) -> re.Match[str] | None:
    """A formula for the jobs in the same sentence as a count asked for, neither of them what is replaced ("-j 8 … or
    better yet -j $(nproc)"; not "-j2 instead of -j", nor a story's "ran -j$(nproc) = -j16" before "cap it at 4")."""
    said = [str(c.value) for c in counts if c.value != w.UNWORKABLE]
    for sentence in _SENTENCE_END_RE.split(_NOT_A_COUNT_RE.sub(" ", w.INSTEAD_TAIL_RE.sub("", masked))):
        if any(re.search(rf"(?<!\d){v}(?!\d)", sentence) for v in said) and (
                m := w.JOBS_AS_FORMULA_RE.search(sentence) or w.JOBS_FORMULA_SLOT_RE.search(sentence)):
            return m
    return None


def _count_said_before(masked: str, *, quoted: str = "") -> w.Number | None:
    """The one jobs count told before the request, when the request points back at it; else the one a quote above
    the request tells ("> something sensible like `make -j 4`" above "yes, rebuild vllm with that")."""
    if not (m := WITH_THAT_RE.search(masked) or DO_THAT_RE.search(masked)):
        return None
    return _one_count(masked[: m.start()]) or (_one_count(quoted) if quoted else None)


# The second of two things that both did something: "-j2 and -j4 both worked", "-j8 and -j16 all failed".
SHARED_RESULT_RE = re.compile(r"^(?:-?j ?\d+|\d+(?: jobs| threads)?) (?:both|all|each|too)\b")
# A clause that is only how it went: "→ success", "→ done in 2h", "-> oom".
RESULT_ONLY_RE = re.compile(r"(?:success|successful|succeeded|done|finished|passed|passes|ok|okay|fine|works|worked"
                            r"|green|fixed|failed|fails|oom(?:ed|'d|s)?|killed|crashed|died"
                            r"|(?:(?:the )?same|another|an?)(?: \w+)? (?:oom|error|crash|failure|result|problem|thing))"
                            r"(?:!+)?"
                            r"(?: (?:in|after|at|within) [\w .:-]{1,20})?")
# What a request would bring, said as a warning or a dare: "restart X at 64 and it dies", "… and watch it burn",
# "kill it and see what happens, I dare you".
CONSEQUENCE_RE = re.compile(r"(?:it|that|this|BUILD|HOST|the box|everything|the build)(?: just| instantly| promptly)?"
                            r" (?:dies|crashes|fails|ooms|oom's|breaks|hangs|explodes|freezes|falls over|will die"
                            r"|'ll die|will crash|'ll crash|will oom|'ll oom|gets killed|goes down|swaps)\b"
                            r"|(?:watch|see) (?:it|them|everything|the box|HOST|BUILD) (?:die|burn|crash|oom|explode"
                            r"|fall over|go down|melt)"
                            r"|see what happens|see if i care|i dare you|good luck|have fun|enjoy")
ARROW_RE = re.compile(r"\s*(?:→|->|=>|⇒|-->|⟶)\s*")
# What follows an arrow and tells how it went, not what to do next: "→ frees 60G", "→ memory back to 200G".
_OUTCOME_RE = re.compile(r"(?:mem|memory|ram|gpu|eta|time|build time|swap)\b\s*(?:back|down|up|to|at|drops"
                         r"|dropped|frees|freed|goes|went|is|was|of|=|~|≈|\d)"
                         r"|(?:frees|freed|saves|saved|fixes|fixed|works|worked|ooms|oomed|dies|died|fails|failed"
                         r"|crashes|crashed|hangs|hung|succeeds|succeeded|passes|passed|finishes|finished|takes|took"
                         r"|eta|~|≈)\b|\d+(?:\.\d+)? ?(?:h|hrs?|hours?|min|mins|minutes|g|gb|gib|m|mb|%)\b")


# What stands between two clauses of the masked text: a dash or a colon, "or" (and a word it may have taken along).
DASH_SEP_RE = re.compile(r"\s*[-–—:]\s*")
OR_SEP_RES = (re.compile(r"\s+or\s+"), re.compile(r"\s+or\s+\S+\s+"))


def _joined_by(one: str, other: str, masked: str, *seps: re.Pattern[str]) -> bool:
    """``other`` follows ``one`` in ``masked`` across one of ``seps`` (plain look-ups, no pattern made per call)."""
    at = masked.find(one)
    while at >= 0:
        for sep in seps:
            if (m := sep.match(masked, at + len(one))) and masked.startswith(other, m.end()):
                return True
        at = masked.find(one, at + 1)
    return False


def _or_between(one: str, other: str, masked: str) -> bool:
    """ "… now that X is finished or killed": two ways a thing is, not a result told after what was done."""
    return _joined_by(one.removeprefix(w.LEAD_MARK), other.removeprefix(w.LEAD_MARK), masked, *OR_SEP_RES)


def _outcome_after_arrow(request: str, after: str, masked: str) -> bool:
    """ "rebuild X at 16 → same OOM", "kill X -> frees 60G": what came of it; "kill X → rebuild at 4" asks on."""
    return bool(_OUTCOME_RE.match(after)) and _joined_by(request, after, masked, ARROW_RE)


# Whose words a request was, said after it: "kill X, he said, and then it was all gone".
SAID_AFTER_RE = re.compile(r"(?:he|she|they|someone|somebody|the lead|my lead|the boss|my boss) (?:said|told (?:me|us)"
                           r"|wrote|yelled|shouted|replied|answered)")
# A request told as done: "vllm -j4 restart done", "the rebuild finished".
DONE_RE = re.compile(r"\b(?:restart|rebuild|rerun|retry|kill|build|relaunch)(?: is| was| has)?(?: been)?"
                     r" (?:done|finished|complete|completed|succeeded|successful|worked|ok|okay|through)\b")


# Doing what was just told, for a build: "so do that", "do BUILD like that", "do the same for BUILD".
DO_THAT_RE = re.compile(r"(?:^|[,.;:!?\-] ?|\b(?:so|then|just|pls|please|and) )do (?:that|this|it|the same)"
                        r"(?: (?:for|on|with|to) (?:BUILD|it))?(?: (?:please|pls|then|too|now))?"
                        r"(?:\s*[.!]*$|(?= (?:and|then|on|do) ))"
                        r"|\bdo BUILD (?:like that|that way|the same way)\b")


def _one_count(before: str) -> w.Number | None:
    """The one jobs count ``before`` tells, if it tells exactly one."""
    values = {int(g) for rx in (n.JOBS_STRONG_RE, n.JOBS_UNIT_RE, _COUNT_OF_JOBS_RE, n.JOBS_TO_RE)
              for hit in rx.finditer(before)
              if (g := _first_group(hit)).lstrip("-").isdigit()}
    if len(values) != 1:
        return None
    return w.Number.of(str(values.pop()), "-j{}")


def _is_bare(rx: re.Pattern[str], body: str) -> bool:
    """The clause is nothing but what ``rx`` reads (plus fillers): "…, one command at a time"."""
    return any(rx.fullmatch(text) for text in (body.strip(" .!,;"), " ".join(w.FILLER_RE.sub(" ", body).split())))


def _is_bare_jobs(body: str) -> bool:
    """The clause is nothing but "16 jobs" (plus fillers): a reply in a thread, not a remark."""
    bare = " ".join(w.FILLER_RE.sub(" ", body).split())
    return bool(n.JOBS_UNIT_RE.fullmatch(bare)) and not _MACHINE_UNIT_RE.search(body)


# "64 cores on HOST", "8 cpus": what a machine has, not a count asked for (a bare "16 jobs" or "8 threads" is).
_MACHINE_UNIT_RE = re.compile(r"\d ?(?:cores?|cpus?|vcpus?)\b(?![a-z])"
                              r"(?! (?:please|pls|plz|then|instead|max|or (?:less|fewer)|at most|tops)\b)")


_COMPARED_TO_BEFORE_RE = re.compile(
    r"\b(?:than|as|like) (?:the |it was |it did )?(?:last|previous) (?:time|run|build)\b")
PLEASE_RE = re.compile(r"\b(?:please|pls|plz)\b")
NAMES_LEAD_RE = re.compile(r"(?:(?:the |on )?(?:BUILD|HOST)(?: build| one)?(?: (?:again|once more|at|with|w/|using"
                           r"|on HOST))*[:,]? ?)+")


def _asks_for_jobs(body: str, m: re.Match[str], asked_from: int, alone_is_enough: bool, *,
                   addressed: bool = False) -> bool:
    """A number is asked for when a request verb comes before it, or it opens the clause on its own (said to
    rigops, after the name of what it is for: "@rigops sgl-kernel -j24", "@rigops vllm again with 6 threads")."""
    just_before = body[max(0, m.start() - n.JOBS_LOOKBACK): m.start()]
    if n.JOBS_NOT_NEW_RE.search(just_before) or n.JOBS_STORY_AFTER_RE.match(body, m.end()):
        return False
    if m.start() == 0 or (addressed and NAMES_LEAD_RE.fullmatch(body[:m.start()])):
        return alone_is_enough or addressed
    return m.start() >= asked_from


def _first_group(m: re.Match[str]) -> str:
    return m.groups()[_group_index(m)] or ""


def _group_index(m: re.Match[str]) -> int:
    return next(i for i, g in enumerate(m.groups()) if g is not None)


# --- from hits to steps --------------------------------------------------------------------------------


def _actions(hits: _Hits, addressed: bool, *, named: bool = False) -> set[str]:
    """A weak request ("stop it", "restart") acts beside a strong one, memory trouble, a message to rigops,
    or a message that names the build or host it is about ("llama-cpp is hanging gpu01. stop it")."""
    actions = set(hits.strong)
    if addressed or hits.trouble or hits.strong or named:
        actions |= hits.weak
    if addressed:
        actions |= hits.soft
    if hits.trouble and (actions or hits.trouble_alone) and not (
            addressed and actions and actions <= {"log", "status", "gpu", "chart"}):
        actions.add("mem")  # said to rigops, "it ran out of memory, show me the log" asks for the log alone
        if "rebuild" in actions:
            actions.add("kill")
    return actions


# Words that make a mention of memory trouble an explanation or a guess, not news: "it's likely caused by OOM",
# "perhaps you are running out of memory", "without it flash-attn will OOM".
TROUBLE_HEDGE_RE = re.compile(
    r"\b(?:likely|probably|perhaps|maybe|might|may|could|would|will|can|cause|causes|caused|causing|because"
    r"|since|due to|without|lead to|leads to|related|which|means|if|whether|prevent|avoid|suspect|guess|seems"
    r"|sounds|looks like|consistent|typical|usually|often|sometimes|known|unlikely|doubt|doubtful|ruled out"
    r"|when|whenever|realistic|common|normal|expected|inevitable|apparently|seemingly|evidently|presumably"
    r"|must have)\b"
)
MAX_BARE_WORDS = 5  # words beside the trouble itself in a plain cry about it ("the box is dying again, help")


def _bare_trouble(body: str) -> bool:
    """The clause is a plain cry about memory trouble now: the trouble and a few words, no hedge."""
    if TROUBLE_HEDGE_RE.search(body):
        return False
    rest = w.TROUBLE_RE.sub(" ", body)
    return len(re.findall(r"[a-z0-9'-]+|HOST|BUILD", rest)) <= MAX_BARE_WORDS


def _numbers(hits: _Hits, actions: set[str]) -> tuple[int | None, int | None, list[str]]:
    errors: list[str] = []
    jobs = _checked_jobs(hits.jobs, errors) if "rebuild" in actions else None
    lines = _checked_lines(hits.lines, errors) if "log" in actions else None
    return jobs, lines, errors


def _checked_jobs(nums: list[w.Number], errors: list[str]) -> int | None:
    return _checked(nums, MIN_JOBS, MAX_JOBS, "jobs", errors)


def _checked_lines(nums: list[w.Number], errors: list[str]) -> int | None:
    return _checked(nums, 1, MAX_LOG_LINES, "lines", errors)


def _checked(nums: list[w.Number], low: int, high: int, what: str, errors: list[str]) -> int | None:
    """The one in-bounds value asked for; out-of-bounds or conflicting values become errors. An expression
    beside one plain number explains it ("MAX_JOBS=8 (half the cores)"): the number is the one asked for."""
    plain = {n.value for n in nums if n.value != w.UNWORKABLE}
    if len(plain) == 1 and len(plain) < len({n.value for n in nums}):
        nums = [n for n in nums if n.value != w.UNWORKABLE]
    bad = [n for n in dict.fromkeys(nums) if not low <= n.value <= high]
    errors += [f"{n.shown}: {what} must be between {low} and {high}" for n in bad]
    values = sorted({n.value for n in nums})
    if bad or len(values) > 1:
        if not bad:
            errors.append(f"several {what} values ({', '.join(map(str, values))}): say just one")
        return None
    return values[0] if values else None


def _steps(actions: set[str], jobs: int | None, lines: int | None,
           order: dict[str, int] | None = None, *, clean: bool = False) -> tuple[Step, ...]:
    """The steps in the order the message asked for them ("stop it, check the gpus, then rebuild at 8");
    a kill that a rebuild implies, and the memory look that trouble adds, go right before the rebuild."""
    order = order or {}
    ordered = step_names()
    rank: dict[str, int] = {a: i for i, a in enumerate(ordered)}
    last = len(ordered)

    def key(a: str) -> tuple[int, int]:
        if a == "kill" and "rebuild" in actions and order.get("kill", last) >= order.get("rebuild", last):
            return (order.get("rebuild", last), -2)
        if a == "mem" and "mem" not in order:
            anchor = order.get("kill", order.get("rebuild", last)) if "kill" in actions else -1
            return (anchor, -1 if "kill" not in order else rank["mem"])
        return (order.get(a, last), rank[a])

    return tuple(
        Step(a, jobs=jobs if "jobs" in command(a).params else None,
             lines=lines if "lines" in command(a).params else None, clean=clean and "clean" in command(a).params)
        for a in sorted((a for a in ordered if a in actions), key=key)
    )


# --- host and build ------------------------------------------------------------------------------------


def _resolve(
    steps: tuple[Step, ...], names: w.Names, config: Config, context: ThreadContext | None,
    errors: list[str], warnings: tuple[str, ...], *, channel: str | None = None,
) -> Plan:
    actions: set[str] = {s.action for s in steps}
    host = build = None
    asked: list[Question] = []
    guess = None
    if _on_hosts(actions):
        mapped = config.slack.channel_hosts.get(channel or "", ())
        host = _resolve_host(names, config, context, errors, asked, mapped=mapped)
        if host is not None and not names.hosts and len(mapped) == 1 and host == mapped[0] and not (
                context and context.host == host):
            guess = f"{host} — this channel's host"
        if host is not None and config.is_group(host):
            build = _resolve_group(host, names, config, actions, errors)
        elif host is not None:
            build = _resolve_build(host, names, config, context, actions, errors, asked)
    elif names.hosts and len(names.hosts) == 1:
        host = names.hosts[0]
    chosen = config.hosts[host].builds.get(build or "") if host in config.hosts and host is not None else None
    if chosen is not None and any(s.clean for s in steps):
        warnings = (*warnings, *_clean_checked(chosen, errors))
    error = "; ".join(dict.fromkeys(errors)) or None
    question = asked[0] if asked and len(dict.fromkeys(errors)) == 1 else None  # one open answer, nothing wrong
    return Plan(host=host, build=build, steps=steps, error=error, warnings=warnings, question=question, guess=guess)


def _clean_checked(build: BuildConfig, errors: list[str]) -> tuple[str, ...]:
    """A clean rebuild removes only the build directory rigops keeps: a build that names its own is refused
    (rigops never removes a directory it did not make); one that keeps none starts as it always does."""
    if build.names_build_dir:
        errors.append(f"`{build.name}` names its own build directory (`build-dir` in its command, or "
                      "SKBUILD_BUILD_DIR in its env), and rigops removes only the one it keeps itself: remove "
                      "that one on the host, or drop it from the config and let rigops keep it")
        return ()
    if build.kept_dir is None:
        return (f"rigops keeps no build directory for `{build.name}` (resume = \"never\"): it starts as its "
                "command always does",)
    return ()


def _resolve_host(
    names: w.Names, config: Config, context: ThreadContext | None, errors: list[str], asked: list[Question],
    *, mapped: tuple[str, ...] = (),
) -> str | None:
    known = ", ".join(mapped or config.hosts)
    groups = [h for h in names.hosts if h in config.groups]
    if len(groups) == 1 and set(names.hosts) - {groups[0]} <= set(config.groups[groups[0]]):
        names = replace(names, hosts=(groups[0],))  # "both a100 nodes, node-3 and gpu01": the group, by its hosts
    if len(names.hosts) > 1:
        errors.append(f"the message names several hosts ({', '.join(names.hosts)}): name one")
        return None
    if names.hosts:
        return names.hosts[0]
    if names.unknown:
        errors.append(f"unknown host {names.unknown[0]!r} (known: {', '.join(config.hosts)})")  # named: all of them
        return None
    ctx_host = context.host if context and context.host in config.hosts else None
    if len(names.builds) == 1:
        return _host_of_build(names.builds[0], config, ctx_host, errors, asked)
    if ctx_host or config.default_host:
        return ctx_host or config.default_host
    if len(mapped) == 1:
        return mapped[0]
    errors.append(f"which host? known: {known}")
    asked.append(Question("host", mapped or tuple(config.hosts)))
    return None


def _resolve_group(host: str, names: w.Names, config: Config, actions: set[str], errors: list[str]) -> str | None:
    """A group (or "all") is for looking: kill, rebuild and log name one host."""
    one_host_only = sorted(_where(actions, lambda c: c.hosts == "one"))
    if one_host_only:
        members = ", ".join(config.members(host))
        errors.append(f"{' and '.join(one_host_only)} can only target one host at a time: name one "
                      f"({host}: {members})")
    return names.builds[0] if len(names.builds) == 1 else None


def _host_of_build(build: str, config: Config, ctx_host: str | None, errors: list[str],
                   asked: list[Question]) -> str | None:
    holders = [h for h, hc in config.hosts.items() if build in hc.builds]
    if ctx_host in holders:
        return ctx_host
    if len(holders) == 1:
        return holders[0]
    errors.append(f"which host? {build!r} is on {', '.join(holders)}")
    asked.append(Question("host", tuple(holders), build=build))
    return None


def _resolve_build(
    host: str, names: w.Names, config: Config, context: ThreadContext | None, actions: set[str],
    errors: list[str], asked: list[Question],
) -> str | None:
    builds = config.hosts[host].builds
    listed = ", ".join(builds) or "none"
    if len(names.builds) > 1:
        errors.append(f"the message names several builds ({', '.join(names.builds)}): name one")
        return None
    if names.builds:
        if names.builds[0] in builds:
            return names.builds[0]
        errors.append(f"no build {names.builds[0]!r} on host {host!r} (builds: {listed})")
        return None
    if context and context.build in builds:
        return context.build
    if _where(actions, lambda c: c.build_default) and config.hosts[host].default_build:
        return config.hosts[host].default_build
    if "rebuild" in actions and not names.unknown_builds:  # a build it does not know is refused already
        errors.append(f"which build on {host}? known: {listed}" if builds
                      else f"no builds configured on host {host}")
        if builds:
            asked.append(Question("build", tuple(builds)))
    return None


# --- slash command arguments ---------------------------------------------------------------------------


def _command_args(
    args: list[str], action: Action, config: Config
) -> tuple[list[str], list[str], w.Number | None, list[str]]:
    host_map, build_map = w.config_names(config)
    hosts: list[str] = []
    builds: list[str] = []
    number: w.Number | None = None
    errors: list[str] = []
    for arg in args:
        if arg == ALL_HOSTS:
            hosts.append(ALL_HOSTS)
        elif arg in host_map:
            hosts.append(host_map[arg])
        elif arg in build_map:
            builds.append(build_map[arg])
        elif (num := _command_number(arg, action)) and number is None:
            number = num
        elif action != "hosts" and not errors:  # the first bad argument is enough to say
            errors.append(_bad_argument(arg, action, config))
    return list(w.unique(hosts)), list(w.unique(builds)), number, errors


def _command_number(arg: str, action: Action) -> w.Number | None:
    params = command(action).params
    if "jobs" in params and (m := CMD_JOBS_RE.fullmatch(arg)):
        return w.Number.of(m.group(1), "-j{}")
    if "lines" in params and (m := CMD_LINES_RE.fullmatch(arg)):
        return w.Number.of(m.group(1), "{} lines")
    return None


def _bad_argument(arg: str, action: Action, config: Config) -> str:
    if NAME_RE.fullmatch(arg) and not arg.lstrip("-").isdigit():
        hosts = ", ".join(config.hosts)
        return f"unknown host or build {_show(arg)} (hosts: {hosts}); usage: {command(action).full_usage}"
    return f"unexpected argument {_show(arg)}; usage: {command(action).full_usage}"


def _show(token: str) -> str:
    """A user token, quoted, only when it is short and plain (errors never echo arbitrary text)."""
    return repr(token) if SAFE_TOKEN_RE.fullmatch(token) else "(that argument)"
