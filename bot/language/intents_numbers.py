"""Numbers in chat: parallelism (-j) and counts as people write them, for ``bot.language.intents``.

``canonical_numbers`` rewrites the many ways of writing a count into the few the rules read; the ``JOBS_*``
patterns find a requested -j and tell it from a number in a story about an old one.
"""

from __future__ import annotations

import re

# --- numbers as people write them ----------------------------------------------------------------------
# Before any rule runs, the many ways of writing a count become the few the rules read: "four jobs" -> "4 jobs",
# "jobs: 8" / "jobs - 8" / "MAX_JOBS 8" -> "jobs=8" / "max_jobs=8", "-j: 12" -> "-j=12", "2k lines" -> "2000 lines".
# A word becomes digits only where a count is meant (a unit after it, or a parallelism word before it), so
# "the vllm one" and "one of the builds" keep their words.

_ONES = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS = ("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
          "nineteen")
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
WORD_VALUES: dict[str, int] = {
    "zero": 0, "single": 1, "fourty": 40,
    **{w: i for i, w in enumerate(_ONES, 1)},
    **{w: i for i, w in enumerate(_TEENS, 10)},
    **{w: 10 * i for i, w in enumerate(_TENS, 2)},
}
_W_ONES = "|".join(_ONES)
_W_BELOW_100 = rf"(?:(?:{'|'.join(_TENS)}|fourty)(?:[- ](?:{_W_ONES}))?|{'|'.join(_TEENS)}|{_W_ONES}|zero)"
_W_NUMBER = (
    rf"(?:half a dozen|(?:(?:a|{_W_ONES}) )?dozen|(?:(?:a|{_W_ONES}) )?hundred(?: (?:and )?{_W_BELOW_100})?"
    rf"|(?:a|{_W_ONES}) thousand|{_W_BELOW_100}|(?:a )?single)"
)
# What may follow a count: "four jobs", "two-way", "fifty lines", "eight in parallel".
_COUNT_UNIT = (
    r"(?:parallel |concurrent |compile |ninja |build |log |build log |output )?"
    r"(?:jobs?|threads?|cores?|workers?|procs?|processes|cpus?|compilers?|compiles?|parallel(?:ism)?|concurrent"
    r"|lines?|in parallel|at a time|at once|concurrently)\b|-way\b"
)
# Words before a count that make it one: "-j twelve", "jobs: eight", "drop to eight", "retry with four".
_COUNT_BEFORE = (
    r"(?:-{1,2}j(?:obs)?|\bj|\bjobs|\bmax[_ ]jobs|\bparallelism(?: of)?|\bconcurrency|\b(?:down |back )?to"
    r"|\bwith|\busing|\bat|\btry|\blast|\btail(?: -n)?|(?<!\S)-n)[ =:]\s?"
)
SPELLED_RE = re.compile(
    rf"(?P<before>{_COUNT_BEFORE})?(?<!couple )(?<!few )(?<!several )(?<!many )\b(?P<num>{_W_NUMBER})\b"
    rf"(?P<unit>(?=[- ]?{_COUNT_UNIT}))?"
)
_STRONG_BEFORE_RE = re.compile(r"-{1,2}j(?:obs)?|j|jobs|max[_ ]jobs|parallelism(?: of)?|concurrency")
# "jobs: 8", "MAX_JOBS 20", "jobs - 8", "-j: 12" -> key=value (":" and " - " would split the clause there).
_ENV_KEYS = (  # names of settings, which also take a plain space: "MAX_JOBS 20", "max jobs 8"
    r"max_jobs|max jobs|max_job|max job|cmake_build_parallel_level|make_jobs|ninja_jobs|num_jobs|build_jobs"
    r"|parallel_level"
)
_JOBS_KEYS = rf"{_ENV_KEYS}|parallelism|concurrency|jobs|par|parallel|cores|cpus|workers|procs"  # "cores = 0"
_SEPARATOR = r"(?:\s*(?::=|:)\s*|\s+-+\s+)"
JOBS_SEPARATOR_RE = re.compile(
    rf"(?:(?<![\w-])(?P<env>{_ENV_KEYS})\s+|(?<![\w$-])(?P<key>-{{1,2}}j(?:obs)?|j|{_JOBS_KEYS}){_SEPARATOR})"
    r"(?=-?\d|\$|nproc\b)"
)
FLAGS_VAR_RE = re.compile(r"(?<![\w-])(?:makeflags|ninjaflags|make_flags|ninja_flags)\s*[=:]\s*(?=-{1,2}j)")
THOUSANDS_RE = re.compile(r"(?<![\w.])(\d{1,2})k(?= (?:log |build log |output )?lines?\b)")


# A share of the machine rather than a number: "half the cores", "all cores", "1/8 of the cores", "every core".
# It becomes the expression it stands for, which rigops refuses with a clear error (it cannot work it out).
SHARE_OF_CORES_RE = re.compile(
    r"\b(?:(?P<frac>half|a quarter|a third|\d{1,2}/\d{1,2}|\d{1,3} ?%)(?: of)?|(?P<all>all|every|each))"
    r"(?: (?:the|my|our|your|their|its|available|physical|logical|detected|host's|machine's|system|cpu))*"
    r"(?: (?P<n>\d{1,4}))? (?:cores?|cpus?|threads|nproc|processors?)\b"
)


# The machine's core count said in words where a number goes: "as many jobs as there are cores", "the number of
# CPUs on the host", "one job per core", "-j auto". It is the expression it stands for too ("$(nproc)").
_CORES = (r"(?:(?:the|all|available|physical|logical|system|cpu|hardware) )*(?:cores?|cpus?|processors?|threads)\b"
          r"(?: (?:on|of|in) (?:the|this|that|your|my|our) (?:host|box|machine|node|server|system))?")
AS_MANY_AS_CORES_RE = re.compile(
    rf"\b(?:as many|the same number of) (?:(?:parallel |build |compile )?(?P<what>jobs|threads|workers|processes) )?"
    rf"as (?:there are )?(?:the )?{_CORES}"
    rf"(?: there are)?"
    # "as many CPU cores as HOST has"
    rf"|\bas many (?:{_CORES} )?as (?:HOST|it|the (?:box|machine|host|node|server)|[a-z][\w-]*\d[\w-]*)"
    r" (?:has|have|got)\b")
NUMBER_OF_CORES_RE = re.compile(rf"\b(?:(?:equal|equivalent|set) to )?the (?:number|count|no\.?|amount) of {_CORES}")
_PER_UNIT = (r"(?:single )?(?:core|cpu|processor|thread|gpu|card|device|node|numa node|socket"
             r"|\d{1,4} ?(?:gb|gib|g|gigs?)(?: of (?:ram|memory))?|gb|gib|gig)\b")
JOB_PER_CORE_RE = re.compile(r"\b(?:one|a|1|two|2|three|3|four|4|half a) (?:jobs?|threads?|workers?|process(?:es)?)"
                             rf" (?:per|for each|for every|a) {_PER_UNIT}"
                             # a rate of GPUs, nodes or memory: "4 jobs per GPU", "MAX_JOBS at 1 per 8GB"
                             r"|\b\d{1,2} (?:(?:compile |parallel |build )?(?:jobs?|threads?|workers?|processes) )?"
                             rf"(?:per|for each|for every) {_PER_UNIT}"
                             # memory per job, said where the count goes: "2 gigs per compile job"
                             r"|\b\d{1,3} ?(?:gb|gib|g|gigs?)(?: of (?:ram|memory))? (?:per|for each|for every|a|each)"
                             r" (?:compile |parallel |build )?(?:job|process|worker|compiler|compile)\b"
                             # "all but 2 cores"
                             r"|\ball but (?:one|two|a few|\d{1,2}) (?:of the )?(?:cores?|cpus?|threads|processors?)\b"
                             # "one less than HOST physically has", "two more than the core count"
                             r"|\b(?:one|two|a few|1|2|\d{1,2}) (?:less|fewer|more) than (?:what )?(?:the )?"
                             r"(?:HOST|[a-z][\w-]*\d[\w-]*|it|the box|the machine|the node|the core count|the cores"
                             r"|cores|cpus|nproc)"
                             r"(?: (?:physically |actually )?(?:has|have|got|cores|cpus))?\b")
JOBS_AUTO_RE = re.compile(r"(?<![\w-])(?P<key>-{1,2}j(?:obs)?|jobs|max_jobs)(?P<sep>\s*=\s*|\s+)auto\b")


# Arithmetic or a function where the count goes: "min(nproc, 8)", "$(makeopts_jobs)", "MAX_JOBS//NVCC_THREADS",
# "(MemAvailable - 16) // 8", "ncpu + 1", "CPU_THREADS-2", "4×4": an expression rigops does not work out ("$expr").
_MACHINE_WORD = (r"(?:#\s?(?:of )?(?:cores|cpus|procs|threads)|n?procs?|n_?cpus?|num_?cpus?|n_?parallel|cpu_?threads"
                 r"|cpu_?count|num_?cores|n_?cores|cores"
                 r"|memavailable|mem_?available|max_jobs|nvcc_threads|total_?mem(?:ory)?|ram_?gb|mem_?gb)")
_OPERAND = r"\(?\s*[\w.]+\s*\)?"
_OP = r"\s*(?://|[-+*/×÷%]|\b(?:divided by|times|minus|plus)\b)\s*"
_SIZE_UNIT = "(?:gb|gib|g|mb|mib)"
_SUM = r"\d{1,4}\s*[-+*/×]\s*\d{1,4}"
_MORE_SUM = r"(?:\s*[-+*/×]\s*\d{1,4})*(?![\w.])"
JOBS_EXPR_RE = re.compile(
    r"\b(?:min|max|floor|ceil|round|int)\s*\([^()\n]{1,40}\)"
    r"|\$\((?!nproc\))[^()\n]{1,40}\)|\$\(\([^()\n]{1,40}\)\)"
    rf"|(?<![$\w(])\(?\s*\b{_MACHINE_WORD}\b\s*\)?(?:{_OP}{_OPERAND})+"
    rf"|(?<![\w.])\d{{1,3}}\s*(?:[×*]|x(?=\d{{1,3}}(?:\s*(?:jobs?|threads?)\b|\s*$|[,;.])))\s*\d{{1,3}}(?![\w.])"
    # a formula in words: "N = [RAM in GB] / 8 + 1 jobs", "(total ram)/4"
    rf"|\[[^\[\]\n]{{1,30}}\](?:{_OP}{_OPERAND})+"
    rf"|\b(?:ram|memory|mem|total ram|total memory)(?: in {_SIZE_UNIT})?\)?{_OP}\d{{1,5}}(?: ?{_SIZE_UNIT})?\b"
    # arithmetic of plain numbers where the count goes: "MAX_JOBS 64/4", "at (64-8)/2", "-j (64-8)/2" (a bare
    # "-j 32-4" is a range: intents_words.JOBS_RANGE_RE)
    rf"|(?:(?<=max_jobs )|(?<=max_jobs=))\(?{_SUM}\)?{_MORE_SUM}"
    rf"|(?<=-j)\s*\({_SUM}\){_MORE_SUM}"
    rf"|(?<=\bat )\({_SUM}\)\s*[-+*/×]\s*\d{{1,4}}(?![\w.])"
    # a variable where the count goes: "-j {cores}", "-j N", "-j 2N", "MAX_JOBS=${CPUS}"
    r"|(?<![\w-])(?:-j|max_jobs|jobs)\s*=?\s*(?:\{[\w ]{1,20}\}|\$\{?(?!expr\b)[a-z_]\w{0,20}\}?|\d{0,2}n\b(?!'))"
    # a letter for the count where one goes: "rebuild with 2N", "at N-1", "with N+2 jobs", "using 2*N jobs", "with
    # x jobs" (a variable the reader is to fill in, never the number after it)
    r"|(?:(?<=\bwith )|(?<=\bat )|(?<=\busing )|(?<=\buse )|(?<=\bto )|(?<=\btry ))(?:\d{1,2}\s*[*×]?\s*)?n"
    r"(?:\s*[-+*/]\s*\d{1,3})?(?=\s*(?:jobs?|threads?|processes|procs|workers|in parallel|$|[,;.!?)]))"
    r"|(?<![\w-])(?:\d{1,2}\s*[*×]?\s*)?[nx](?:\s*[-+*/]\s*\d{1,3})?(?=\s+(?:parallel\s+)?(?:jobs?|threads?|processes|procs"
    r"|workers)\b)"
    # a variable in snake case where the count goes: "-jNUM_PHYS_CORES", "MAX_JOBS=build_jobs"
    r"|(?<![\w-])(?:-j|(?:max_jobs|jobs)\s*=)\s*(?=[a-z]*_)[a-z][a-z_]{2,30}\b"
    # "-j 16/2" (a bare "-j 32-4" is a range), "MAX_JOBS = total_mem_gb / 4", "-j 1e2", "-j 2k", "-j 0x10", "the
    # default -j minus 4", "its usual jobs plus one"
    r"|(?<=-j)\s*\d{1,4}\s*[*/×]\s*\d{1,4}(?![\w.])"
    r"|(?<![\w-])(?:max_jobs|jobs)\s*=\s*[a-z_][a-z_]{2,30}\s*(?://|[-+*/×])"
    r"|(?<![\w-])(?:-j|max_jobs|jobs)\s*=?\s*\d{1,4}(?:e\d{1,3}|k|x[0-9a-f]{1,4})\b"
    r"|(?<![\w-])(?:-j|jobs|max_jobs|parallelism|job count)\s+(?:minus|plus|times|divided by)"
    r"\s+(?:\d|one|two|three|four|five|six|half)\b"
    # powers, functions, a number in exponent form, a share of a number, a sum after "at"/"with": "2**4 jobs",
    # "10^1", "sqrt(64) jobs", "1e1 jobs", "(RAM in GB)/2.5 jobs", "half of 32", "at (64-4)", "at 64 - 4"
    r"|(?<![\w.])\d{1,4}\s*(?:\*\*|\^)\s*\d{1,4}(?![\w.])|\b(?:sqrt|log2|pow)\([^()\n]{1,40}\)"
    r"|(?<![\w.])\d{1,3}e\d{1,2}(?=\s?(?:jobs?|threads?)\b)"
    r"|\((?:ram|memory|mem|total ram|free memory)[^()\n]{0,20}\)\s*(?://|[-+*/×])\s*[\d.]+"
    rf"|(?:(?<=\bat )|(?<=\bwith ))\(\s*{_SUM}\s*\){_MORE_SUM}"
    r"|(?:(?<=\bat )|(?<=\bwith ))\d{1,4} (?:[-+] |[*/×] ?)\d{1,4}(?![\w.])(?! ?(?:gb|g|mins?|minutes|h|hours|%))"
    r"|\b(?:half|a third|a quarter|a fifth|two thirds) of \d{1,4}\b(?! ?(?:gb|g|%))"
    r"|\bno limit on (?:the )?(?:number of )?(?:job slots|jobs?|parallelism|parallel jobs)"
    r"|\bunlimited (?:jobs|parallelism|job slots)\b"
)
# A count in shell quotes: -j "$(nproc)", MAX_JOBS='8'.
QUOTED_COUNT_RE = re.compile(r"""((?:-{1,2}j(?:obs)?\s*=?\s*"""
                             r"""|\b(?:max_jobs|jobs|nvcc_threads|cmake_build_parallel_level)\s*=\s*))"""
                             r"""["'](\$\(?[\w(){} /*+-]{1,28}|\d{1,4})["']""", re.IGNORECASE)
# "half of detected CPU threads", "using half of them" (the cores a sentence before named).
HALF_OF_THEM_RE = re.compile(r"\b(?:with|using|at|to|taking|take|use) half (?:of )?(?:them|those)\b")
# ... or of "it", after the cores were named: "using `nproc` as-is for -j seems much. redo X taking half of it".
HALF_OF_IT_RE = re.compile(r"(?P<cores>\b(?:nproc|cores|cpus|threads)\b|\$expr)(?P<between>.{0,200}?)\b(?P<verb>with"
                           r"|using|at|to"
                           r"|taking|take|use) half (?:of )?(?:it|that)\b", re.S)


# The most the machine can take, said in words: "as many jobs as it can handle", "max parallelism", "full speed",
# "2x the cores", "twice the core count": what rigops cannot work out from chat either.
MACHINE_MAX_RE = re.compile(
    r"\bas many (?:jobs |threads |workers )?as (?:it|the box|the machine|the host|HOST|we) can (?:handle|take|do"
    r"|manage|get away with)\b"
    r"|\bmax(?:imum)? (?:parallelism|concurrency)\b|\bfull (?:speed|parallelism|throttle|blast)\b"
    r"|\b(?:\d{1,2}x|twice|double|triple) the (?:cores|cpus|core count|cpu count|number of cores)\b"
)


def _cores(text: str) -> str:
    text = MACHINE_MAX_RE.sub("$(nproc) jobs", text)
    text = AS_MANY_AS_CORES_RE.sub(lambda m: f"$(nproc) {m.group('what') or 'jobs'}", text)
    text = JOB_PER_CORE_RE.sub("$(nproc) jobs", text)
    text = NUMBER_OF_CORES_RE.sub(_cores_or_what_changes, text)
    return JOBS_AUTO_RE.sub(r"\g<key>\g<sep>$(nproc)", text)


# "limit the number of threads … to 4": the number a change is made to, not the machine's count.
_CHANGED_BEFORE_RE = re.compile(r"\b(?:limit|limiting|reduce|reducing|lower|lowering|decrease|decreasing|cap|capping"
                                r"|restrict|bound|change|changing|increase|increasing|raise|bump|drop|cut|adjust"
                                r"|tune|control|constrain|throttle)\s+$")


def _cores_or_what_changes(m: re.Match[str]) -> str:
    if not m.group(0).startswith(("equal", "equivalent", "set")) and _CHANGED_BEFORE_RE.search(m.string[:m.start()]):
        return m.group(0)
    return "$(nproc)"


def _share(m: re.Match[str]) -> str:
    if m.group("all") and m.group("n"):
        return m.group(0)  # "all 8 cores": the count is said ("all 4 processor cores goes BOOOM")
    return "$(nproc) cores" if m.group("all") else "$(nproc)/share cores"


# A time or size told of a count after a colon, "at -j12: 35 min": what it took, said in the words the rules read.
COUNT_RESULT_RE = re.compile(r"((?<![\w-])-{1,2}j ?\d{1,4}|\b\d{1,4} (?:jobs|threads))\s*:\s*"
                             r"(?=~?\d+(?:\.\d+)?\s*(?:min|mins|minutes|s|sec|secs|seconds|h|hours?|m|gb|g|gib|mb|%)"
                             r"(?![\w]))")


# A count changed with an arrow, "MAX_JOBS 16 → 8", "-j32 -> -j16": the count it goes to (the arrow would split
# the clause, and the count it leaves is no request). Not a size or a time after the arrow ("16 -> 8 GB").
COUNT_ARROW_RE = re.compile(r"(?<![\w.])(?:-j ?)?\d{1,4}\s*(?:→|-+>|=>|⇒|➡️?)\s*(?=(?:-j ?)?\d{1,4}(?![\w.%])"
                            r"(?!\s*(?:gb|g|gib|mb|mib|min|mins|minutes|h|hours?|s|secs?|seconds)\b))")


# A count setting to take away is no count asked for: "drop the `JOBS=10` setting", "without the -j10 flag",
# "remove MAX_JOBS=4" (never "drop to 8", "drop -j to 8").
_SETTING = (r"(?:-{1,2}j(?:obs)?|max_jobs|jobs|make_jobs|ninja_jobs|cmake_build_parallel_level|makeflags)"
            r"\s*=?\s*-?j?\d{1,4}")
DROPPED_COUNT_RE = re.compile(
    rf"\b(?P<verb>remove|removing|unset|unsetting|delete|deleting|get rid of|getting rid of|without|disable"
    rf"|disabling|ditch|ditching|strip|stripping"
    # ... these only with a word before the setting ("drop the JOBS=10 setting", not "drop -j32 to …")
    rf"|(?:drop|dropping|lose|losing|revert|reverting|undo|undoing|roll back|rolling back|back out|backing out)"
    rf"(?= (?:the|that|this|your|its|any) ))(?: the| that| this| your| its| any)? (?P<setting>{_SETTING})(?![\w.])")


# A change of the count taken back, "revert the `-j 1` change on X": a rebuild at what it was (the default).
REVERTED_COUNT_RE = re.compile(r"\b(?:revert|undo|roll back|back out) (?:that|the|this|your|its) jobs"
                               r" (?:change|tweak|edit|setting|override|cap|limit)\b")


# A count said with what it is to the speaker: "back to the default 8", "at the usual 16" — the count said.
NAMED_COUNT_RE = re.compile(r"\b(to|at|with) the (?:default|usual|old|original|previous|normal|standard)"
                            r"(?: of| value of| count of)? (-?j?\d{1,4})(?![\w.%])")


# A count replaced by another: "find `--jobs=$(nproc)` and replace it with `--jobs=2`", "change -j32 to -j8",
# "swap -j$(nproc) for -j4", "reduce MAX_JOBS=32 to MAX_JOBS=8": the count it goes to (the one it leaves, a
# formula or a number, is no request, and the two are no range).
_OLD_COUNT = (r"(?:(?:make|ninja|cmake --build \S+) )?"
              r"(?:(?:-{1,2}j(?:obs)?|max_jobs|jobs|makeflags|cmake_build_parallel_level)(?:\s*=\s*|\s*)"
              r"(?:-?\d{1,6}(?![\w.%])|\$\S*|\S*nproc\S*)|-j(?: \(no number\))?(?![\w=]))")  # a value, or a bare -j
_NEW_COUNT = r"(?:(?:make |ninja )?(?:-{1,2}j(?:obs)?|max_jobs|jobs)\s*=?\s*)?\d{1,4}(?![\w.%])"
_REPLACE_VERB = r"replace|swap|change|switch|substitute"
COUNT_REPLACED_RE = re.compile(
    rf"\b(?P<verb>{_REPLACE_VERB}|reduce|lower|drop|bump|cut)"
    rf"(?: (?:the|that|your|its|our|this))?(?: (?:current|old|existing|hard-?coded|default|bare|plain|lone))?"
    rf" {_OLD_COUNT}(?: (?:flag|setting|option|value))?"
    rf" (?:with|for|to|into) (?P<new>{_NEW_COUNT})"  # (not "reduce -j by 4": by how much)
    # "find `--jobs=$(nproc)` and replace it with `--jobs=2`"
    rf"|\bfind (?:the )?{_OLD_COUNT}(?: (?:flag|setting|option|value))? (?:and|,) (?P<verb2>{_REPLACE_VERB})"
    rf" (?:it|that|them) (?:with|for|to|into) (?P<new2>{_NEW_COUNT})")


def _replaced(m: re.Match[str]) -> str:
    verb = m.group("verb") or m.group("verb2")
    return f"{'change' if re.fullmatch(_REPLACE_VERB, verb) else verb} it to {m.group('new') or m.group('new2')}"


def canonical_numbers(text: str) -> str:
    """Counts in words and separators rewritten to the forms the rules read (see above)."""
    text = COUNT_ARROW_RE.sub("", text)
    text = COUNT_REPLACED_RE.sub(_replaced, text)
    text = DROPPED_COUNT_RE.sub(r"\g<verb> the jobs", text)
    text = REVERTED_COUNT_RE.sub("rebuild", text)
    text = NAMED_COUNT_RE.sub(r"\1 \2", text)
    if JOBS_EXPR_RE.search(text):
        text = re.sub(r"(?<=\S)  +(?=\S)", " ", JOBS_EXPR_RE.sub(" $expr ", text))
    text = HALF_OF_THEM_RE.sub(lambda m: f"{m.group(0).split()[0]} $(nproc)/share cores", text)
    text = HALF_OF_IT_RE.sub(lambda m: f"{m.group('cores')}{m.group('between')}with $(nproc)/share cores", text)
    text = _cores(SHARE_OF_CORES_RE.sub(_share, text))
    text = SPELLED_RE.sub(_spelled, text)
    text = THOUSANDS_RE.sub(r"\g<1>000", text)
    text = FLAGS_VAR_RE.sub("", text)
    text = COUNT_RESULT_RE.sub(r"\1 took ", text)
    return JOBS_SEPARATOR_RE.sub(lambda m: f"{m.group('env') or m.group('key')}=", text)


def _spelled(m: re.Match[str]) -> str:
    before, num, unit = m.group("before") or "", m.group("num"), m.group("unit") is not None
    if num in ("one", "single", "a single"):  # as often a pronoun or an adjective: "the vllm one", "one-way"
        unit = unit and not m.string.startswith("-way", m.end())
        is_count = unit or bool(_STRONG_BEFORE_RE.fullmatch(before.rstrip(" =:")))
    else:
        is_count = unit or bool(before)
    return f"{before}{spelled_value(num)}" if is_count else m.group(0)


def spelled_value(words: str) -> int:
    """ "twenty-four" -> 24, "a dozen" -> 12, "two hundred and fifty" -> 250 (only what SPELLED_RE matched)."""
    if words == "half a dozen":
        return 6
    total = current = 0
    for word in re.split(r"[- ]+", words):
        if word == "dozen":
            current = (current or 1) * 12
        elif word == "hundred":
            current = (current or 1) * 100
        elif word == "thousand":
            total, current = total + (current or 1) * 1000, 0
        else:
            current += WORD_VALUES.get(word, 0)  # "a", "and": nothing
    return total + current


# --- parallelism ---------------------------------------------------------------------------------------

# ASCII digits only (int() would also take other scripts' digits), or an expression rigops cannot work out in
# chat ("$(nproc)/2", "nproc - 4", "$CORES"): that one is refused with a clear error, never read as its digits.
_EXPR = (r"[$(]{1,4} ?(?:\$\()?nproc\b[^\s,;]{0,24}|nproc\b[^\s,;]{0,24}|\$\{?[a-z_][a-z0-9_]{0,30}\}?"
         # a name for the core count where the number goes: "-jnumber_of_cores", "-j NCPUS", "--jobs=num_cores"
         r"|(?:number_?of_?|num_?|n_?|total_?|max_?)(?:cores|cpus|procs|processors|threads)\b|cpu_?count\b|core_?count\b")
_NUM = rf"(-?[0-9]+|{_EXPR})"
_NUM_END = r"(?![\w]|\.\d)"
# Unmistakable: -j20, -j 20, -j=20, --jobs 20, MAX_JOBS=20, CMAKE_BUILD_PARALLEL_LEVEL=4, --parallel 8, par=8
# (normalise has made "jobs: 8", "MAX_JOBS 20" and "jobs - 8" into key=value).
JOBS_STRONG_RE = re.compile(
    rf"(?<![\w-])-{{1,2}}j(?:obs)?\s*=?\s*{_NUM}{_NUM_END}"
    rf"|(?<![\w-])(?:{_JOBS_KEYS})\s*=\s*{_NUM}{_NUM_END}"
    rf"|(?<![\w-])-{{1,2}}parallel(?:\s*=\s*|\s+){_NUM}{_NUM_END}"
    rf"|(?<![\w-])-{{1,2}}max-jobs(?:\s*=\s*|\s+){_NUM}{_NUM_END}"
    # a tool's own flag for it: "--job_count 3", "--num-jobs=4", "--parallel-jobs 8", "--jobs-count 2" (never a
    # thread count: "--threads 4" is nvcc's)
    rf"|(?<![\w-])--?(?:num[_-]|max[_-]|parallel[_-]|build[_-])?jobs?(?:[_-](?:count|num|number|n))?"
    rf"(?:\s*=\s*|\s+){_NUM}{_NUM_END}"
)
JOBS_BARE_J_RE = re.compile(rf"(?<![\w-])j(?:=| )?{_NUM}{_NUM_END}")  # "j12", "j=12", "j 12"
JOBS_UNIT_RE = re.compile(
    # the cores a machine has are its size, not a count asked for: "do you have 256 cores on HOST?"
    r"(?:(?<!\bhave )(?<!\bhas )(?<!\bhad )(?<!\bgot )(?<!\bhaving )"
    r"|(?!\d+ ?(?:physical |logical )?(?:cores?|cpus?)\b))"
    rf"(?<![\w.#-]){_NUM}(?: ?(?:parallel |concurrent |compile |ninja |build |make |compilation |cmake |nvcc )?"
    r"(?:jobs?|numjobs|threads?|cores?|workers?|procs?|processes|parallel|parallelism|cpus?|compilers?|compiles"
    r"|invocations"
    r"|tasks|parallel tasks)\b"
    r"(?! (?:fewer|less|lesser|more)\b)"  # "one job fewer", "4 jobs less": a change by that many, not the count
    r"|-way\b|(?: ?x| way) (?:parallel(?:ism)?|concurrency)\b| (?:in parallel|at a time|at once|concurrently)\b)"
    rf"|\b(?:parallelism|concurrency|parallel level) (?:of|at) {_NUM}{_NUM_END}"
)
# A bare number is a count only at the end of the clause or before a word like "please" or "instead": never
# before a unit of something else ("with 2 nodes", "64G", "in 5 min", "at 3pm", "9:30", "95%", "12.4").
_COUNT_END = (
    r"(?=[^\w%]*$|\s+(?:please|pls|now|again|this time|instead|then|for now|asap|too|thanks|thx|ty|max|tops|only"
    r"|at most|or so|ok|okay|maybe|first|HOST|on HOST|BUILD|for BUILD|on BUILD|jobs?|threads?|cores?|workers?"
    r"|someone|somebody|anyone|anybody"
    r"|rather than|instead of|concurrent|parallel|compiles|compile jobs|tasks|nvcc"
    r"|i guess|i think|i'd say|perhaps|probably"
    r"|(?:on|for|in) the BUILD build"
    # the reason or purpose said after the count: "at 2 so that it can't oom", "with 4 because we swap"
    r"|so(?: that)?|because|since|cause|cuz|coz|bc|until|till"
    r"|to (?:avoid|prevent|stop|keep|save|be safe|be sure|make sure|ensure|see|stay|fit|remain|not)|and see"
    r"|procs?|processes|cpus?|parallel|in parallel|at a time|at once"
    # where the count comes from, said after it: "at 4 (as in the runbook)", "at 4 per the runbook"
    r"|as in|as per|per|as discussed|as agreed|like (?:the|in|we|before|last)|following|according to)\b"
    r"|\s*\((?!\s*(?:am|pm|utc|gmt|[ecmp][sd]t|cet|ist)\b))"
)
JOBS_WITH_RE = re.compile(  # "rebuild with 16", "retry using 8", "go with 12", "try 16", "rebuild 16"
    r"(?:\b(?:rebuild|retry|restart|rerun|relaunch|try|build|compile|run|go|redo|do)"
    r"(?: it| again| the build| BUILD| on HOST| clean| fresh| from scratch){0,3}(?: but| only| just)? (?:with|using)"
    r"|\bgo for|\b(?:rebuild|retry|rerun|try)(?: it| again)?|^(?:do|go|use|make (?:it|that)))"
    rf" {_NUM}{_COUNT_END}"
)
# "rebuild it at 4", "send it again at 6": with the build between the verb and "at" (a bare "restart at 3" may be
# a time of day).
JOBS_AT_RE = re.compile(
    r"(?:\b(?:rebuild|retry|restart|rerun|relaunch|try|run|go|redo|kick|put|set)"
    r"(?: it| again| the build| BUILD| clean| fresh| from scratch){1,3}"
    r"(?: on HOST)?|\brebuild) at"
    rf" (?:-j ?)?{_NUM}{_COUNT_END}"
    # "retry at 12 please": with a please after it, no time of day
    rf"|\b(?:retry|rerun|restart|relaunch|redo|start (?:it |BUILD )?over) at {_NUM}(?= (?:please|jobs|threads)\b)"
)
# "retry at 24" after news of memory trouble: the jobs, not a time of day (alone, "retry at 12" may be noon).
JOBS_RETRY_AT_RE = re.compile(rf"\b(?:retry|rerun|redo|try again|go again|restart|start (?:it |BUILD )?over) at {_NUM}"
                              rf"{_COUNT_END}"
                              # "— again at -j1": the count alone after the trouble, ending what is said
                              rf"|(?:^|[,;:.!—–-] ?)again at (?:-j ?)?{_NUM}(?: jobs)?(?: please| pls)?[.!]*$"
                              # "…, -j4 next": the count for the next run, said after the trouble
                              rf"|(?:^|[,;:.!—–-] ?)(?:-j ?|j)?{_NUM}(?: jobs)? next[.!]*$")
# One job said in words: "run the make commands serially", "with just one process", "single-threaded".
JOBS_SERIAL_RE = re.compile(
    r"\b(?:serially|sequentially|in serial|single[- ]threaded|non-?parallel"
    r"|(?:(?<=disable )|(?<=turn off )|(?<=switch off )|(?<=\bno ))(?:the )?(?:build |make |compile )?parallelism"
    # "disable parallel build for X", "turn off parallel compilation", "no parallel make"
    r"|(?:(?<=disable )|(?<=turn off )|(?<=switch off )|(?<=\bno ))(?:the )?parallel (?:builds?|compil\w*|make|jobs"
    r"|ninja)"
    r"|(?:with|using|on) (?:just |only )?(?:one|a single) (?:parallel )?(?:process|job|thread|core|cpu|worker)"
    # "run it again, one command at a time", "one file at a time"
    r"|(?:just |only )?(?:one|a single|1) (?:command|file|job|compile|process|target|unit|task|step|thing)"
    r" at a time)\b"
)
JOBS_TO_RE = re.compile(  # imperative "drop to 32", "cap it at 16", "set jobs to 16", "switch BUILD to 4"
    r"(?:^|\bto )(?:(?:drop|lower|reduce|cut|go down|bump|raise|limit|cap|throttle|bound|restrict|constrain|pin"
    r"|switch|move|set)"
    r"(?: (?:it|that|BUILD|the build))?"
    r"|up (?:it|that|BUILD|the build)"  # "up llama-cpp to 6"
    r"|hard-?code|change|make|go|(?:restore|reset|revert|return)(?: (?:it|that|BUILD|the build))?"
    r"|(?:bring|take|knock|dial|scale|turn|put|set|get|tone|throttle|step|ramp|wind|ratchet)"
    r"(?: (?:it|that|BUILD|the build))?(?: on HOST)?"
    r" (?:down|back|up)(?: (?:it|that|BUILD|the build))?)"
    r"(?: (?:the |BUILD's |the BUILD )?(?:number of |no\.? of |count of )?(?:parallel |concurrent |compile |build )?"
    r"(?:jobs|parallelism"
    r"|(?:parallel )?build (?:number|count)|parallel (?:number|count|level)"
    r"|concurrency|-j|max_jobs|procs|processes|threads|workers|cores|cpus)(?: variable| setting| value)?)?"
    r"(?: (?:for|of|on) (?:BUILD|HOST|it|the build))?(?: down| back| back down| back up| up)? (?:to|at)"
    rf" (?:-j ?|j)?{_NUM}(?: (?:jobs|procs|processes|threads|workers|cores|cpus))?{_COUNT_END}"
)
# The count to go back to, said alone or after the rebuild: "back to 8", "rebuild X back to 8", "… and back down to 4".
JOBS_BACK_TO_RE = re.compile(r"(?:^(?:and |then |so |just )?(?:go |come |set it |put it |take it )?"
                             r"|\b(?:rebuild|restart|rerun|retry)(?: (?:it|that|BUILD|the build))? )"
                             rf"back (?:down |up )?to (?:-j ?)?{_NUM}{_COUNT_END}"
                             # "set it 4 and build again": the "to" left out
                             rf"|^(?:set|put|make) (?:it|that|BUILD|the build|the jobs|jobs|-j) (?:-j ?)?{_NUM}"
                             r"(?=[^\w%]*$)")
# A change of the count said with its object in any words, the verb opening the clause: "limit the number of threads
# used by make for BUILD to 4", "pin the BUILD build on HOST to 2 jobs", "switch threads to 1", "try reducing BUILD
# build jobs to 3 from 4", "limit parallel build jobs from 32 (default) to 8". The noun must say it is the count.
_CHANGE_VERB = (r"(?:limit|limiting|reduce|reducing|lower|lowering|decrease|decreasing|cut|drop|bound|cap|capping|up"
                r"|pin|fix"
                r"|restrict|set|setting|switch|change|changing|bump|raise|increase|increasing|scale|dial|bring|throttle"
                r"|constrain|knock|tone|restore|reset|revert|return|put)")
_COUNT_NOUN = (r"(?:jobs?|threads?|parallelism|parallel (?:count|number|level|jobs|builds?|compiles?)|concurrency|-j"
               r"|multi-?thread(?:ing)? (?:number|count|level)|(?:cpus?|cpu-s|cores?) (?:number|count)"
               r"|(?:number|amount|count) of (?:max_jobs|-j|make jobs|cpus?|cpu-s|cores?)"
               r"|max_jobs|procs|processes|workers|make jobs|build jobs|compile jobs|job count|thread count"
               r"|worker count|workers count|process count|proc count"
               r"|(?:parallel )?tasks"
               r"|(?:number|count) of (?:parallel |build |compile |make )?"
               r"(?:jobs|threads|processes|workers|cores|cpus))")
_NOT_A_COUNT_AFTER = r"(?! ?(?:gb|g|gib|mb|m|%|min|mins|minutes|hours?|h|s|sec|seconds|am|pm|x|times|days?)\b)"
JOBS_CHANGE_RE = re.compile(
    rf"^(?:(?:try|just|please|pls|so|then|now|maybe|also|and) )*{_CHANGE_VERB}\b"
    rf"(?:[^.;!?\n]{{0,60}}? {_COUNT_NOUN}\b[^.;!?\n]{{0,40}}?(?: down| back)? (?:to|at) (?:-j ?|j)?(\d{{1,7}})\b"
    rf"|[^.;!?\n]{{0,60}}? (?:down |back )?(?:to|at) (?:-j ?|j)?(\d{{1,7}}) (?:parallel |concurrent |build |make )?"
    rf"(?:jobs|threads|processes|procs|workers)\b"
    # "restrict ninja to -j8 for X": the tool's own -j says it is the count
    rf"|(?: (?:the )?(?:ninja|make|cmake|nvcc|the compiler|the build|BUILD|it|BUILD's build))"
    rf"(?: (?:on|for|of) (?:BUILD|HOST))? (?:down |back )?(?:to|at) -j ?(\d{{1,7}})\b)"
    rf"{_NOT_A_COUNT_AFTER}"
)
# "retry with fewer jobs, say 4", "less parallelism: 4": the number that answers a relative change on its own.
RELATIVE_THEN_NUMBER_RE = re.compile(
    r"\b(?:fewer|less|lesser|lower|reduce|cut|drop|halve|half|more|higher|raise|increase)\b[^,;:.?!]{0,40}[,;:.?]"
    r" (?:say |like |maybe |perhaps |try "
    r"|so |to |e\.g\. |about |around )?(?:-j ?)?([0-9]{1,4})(?: (?:jobs|or so|please|maybe|max|tops|this time))?"
    r"(?: (?:should|will|would|ought to) (?:do(?: it)?|be (?:fine|enough|ok|okay|plenty))| is (?:fine|enough|plenty))?"
    r"\s*(?:[.!,)]|$)"  # … or the end of the aside it is said in: "(and maybe use a lower -j, like -j3)"
)
# Said to rigops, the build's name and a count after "at" or "with": "vllm at 6 please", "BUILD with 4".
NAME_AT_COUNT_RE = re.compile(rf"^(?:(?:so|then|ok|okay|and) )?BUILD(?: build)?(?: on HOST)?(?: again| once more)?"
                              rf" (?:(?:at|with|w/|back to|down to) (?:-j ?)?|-j ?){_NUM}(?: jobs| threads)?"
                              r"(?: (?:please|pls|plz|now|again|this time|instead|thanks|thx|from now on"
                              r"|going forward|for now|then))*[.!]*$")
# A count described, then said: "set the jobs to a small number like 2", "use a sane -j, say 8".
JOBS_DESCRIBED_THEN_SAID_RE = re.compile(
    r"\b(?:to|at|with|use|using|try) (?:a |an )?(?:small|smaller|low|lower|sane|safe|saner|safer|reasonable|modest"
    r"|conservative|tiny|lowish|small-ish)(?: number| value| count| -j| amount| number of jobs| job count)?"
    r",? (?:like|say|e\.g\.|such as|maybe|around|about|of|i\.e\.) (?:-j ?)?(\d{1,4})\b")
# "reduce the jobs on BUILD …. 3 should do": a number said to be enough, in a sentence of its own.
COUNT_ENOUGH_RE = re.compile(
    r"(?:^|[.;!?] )(?:-j ?)?([0-9]{1,4})(?: jobs)? (?:should|will|would|ought to) (?:do(?: it)?|work|be (?:fine|enough"
    r"|ok|okay|plenty|safe))\s*[.!]?$"
)
# "from 160 to 10", "from 4 jobs to 2": the new value is the second (the clause must ask for the change).
JOBS_FROM_TO_RE = re.compile(
    r"\bfrom (?:-j ?|j)?\d{1,6}(?: (?:jobs?|threads?|cores?|procs?|workers?))? (?:down |up )?to (?:-j ?|j)?(\d{1,6})\b"
    r"(?! ?(?:gb|g|gib|mb|%|min|minutes|hours?|h)\b)"
)
# A verb that asks for a change, opening the clause: "modify the jobs from 160 to 10", "reduce X from 4 to 2".
CHANGE_START_RE = re.compile(
    r"^(?:modify|change|reduce|lower|drop|cut|set|bump|raise|increase|decrease|switch|go|move|take|dial|turn"
    r"|scale|limit|cap|throttle|rebuild|restart|retry|rerun)\b"
)
# Words before a number that make it the old value, not the new one: "from -j64 to -j20", "we were at -j64".
JOBS_LOOKBACK = 40  # characters before a number that JOBS_NOT_NEW_RE looks at ("instead of naively passing -j8")
JOBS_NOT_NEW_RE = re.compile(
    r"(?:\bfrom|\bnot|\b(?:instead of|rather than|in place of)(?: [a-z]+){0,3}|\bthan|\bwas|\bwere|\bcurrently"
    r"|\bstill at|\bspawned|\bspawns|\bspawning"
    r"|\bforked|\bhad|\bhas|\buses|\bused|\b(?:was|were|is|are|been|ran|running|stuck|died|failed|crashed"
    r"|oomed|ooming|oom-ing|it's|we're|still) at)\s*$"
)
# Words after a number that make the clause a story about it: "-j64 is what killed it", "12 jobs in the queue".
JOBS_STORY_AFTER_RE = re.compile(
    r"\s*(?:->|=>|\u2192)"  # "-j4 -> -j$(nproc)": the count replaced, not the one asked for
    r"|\s*(?:is|was|were|are|seems|killed|kills|ooms|oomed|oom|too|caused|causes|made|makes|broke|breaks|did"
    r"|available|in total|total|installed|on (?:the|this|that|a) (?:box|machine|host|node|server)"
    r"|does|works|worked|ran|runs|running|gives|gave|crashes|crashed|fails|failed|also|still|helped|helps"
    r"|blew|blows|died|dies|hung|hangs|pending|queued|waiting|left|remaining|in the queue|per|each"
    r"|just(?! (?:to|for|in case|so|because)\b)|errors"
    r"|errored|segfaults|won't|doesn't|didn't|isn't|can't|never|alone|only(?!\s*[.!]*$)|should|would|could|will|might"
    r"|keeps|kept|has been|had been|goes|went|gets|got|takes|took|ends|ended|completes|completed|finishes"
    r"|finished|succeeds|succeeded|passes|passed|goes through|went through|builds fine|built fine"
    # a result told of the count: "-j32 ok", "-j8 fine", "-j16 vs -j32 makes no difference"
    r"|ok|okay|fine|good|no problem|no issues|vs\.?|versus)\b"
    # what the build does at the count: "with -j32 BUILD needs about 500GB", "at -j16 it peaks around 200G"
    r"|\s+(?:BUILD|it|HOST|the build)?\s*(?:needs|needed|uses|used|peaks|peaked|takes|took|eats|ate|hits|tops out"
    r"|maxes out|consumes|consumed|requires|required|spawns|spawned|finishes|finished|completes|completed)\b"
    # the count judged: "-j2 on a project this size is a pure joke", "-j1 was way too slow"
    r"|[^.;!?,\n]{0,40}? (?:is|was|are|were|'s) (?:a |an |the |way |just |pretty |so |too |really |honestly "
    r"|simply |pure |total |complete |bit )*"
    r"(?:joke|ridiculous|silly|insane|nuts|overkill|slow|not enough|useless|pointless|painful|glacial|absurd"
    r"|low|few|high|many|much|little|small|big|aggressive|conservative|optimistic|tight|generous)\b"
    # a time or a size told of the count: "at -j12: 35 min"
    r"|\s*:\s*~?\d+(?:\.\d+)?\s*(?:min|mins|minutes|s|sec|secs|seconds|h|hours?|m|gb|g|gib|mb|%)(?![\w])"
)
# A request verb anywhere before the number: "try -j20", "drop to 16 jobs", "restart at j12".
REQUEST_ANY_RE = re.compile(
    r"\b(?:try|retry|rebuild|restart|rerun|relaunch|recompile|re-compile|reinstall|redo|re-run|re-?trigger|requeue"
    r"|start over|start (?:it|BUILD) over|start again"
    r"|re-?kick|bounce|drop|lower|reduce|cut|bump|raise|increase|decrease|limit"
    r"|cap|throttle|switch|go|set|change|instead|maybe|how about|what about|let's|lets"
    r"|restore|revert|return|returning|restoring|reset|fix)\b"
)
# "put BUILD on 6 jobs", "put vllm on -j4 too", "keep it on 8 threads": the count the build is put on.
JOBS_ON_RE = re.compile(r"\b(?:put|keep|run|set|move|switch)(?: it| BUILD| the build| the BUILD build)? on (?:-j ?)?"
                        r"(\d{1,4})(?: jobs?| threads?| cores?| procs?| workers?|(?<=-j\d)|(?<=-j\d\d)|(?<=-j \d)"
                        r"|(?<=-j \d\d))\b")
# A verb that is a request only at the start of a clause: "use 16 cores", "make -j 24", "with -j8",
# "ninja -j16", "export MAX_JOBS=24", "max 8 jobs".
REQUEST_START_RE = re.compile(
    r"^(?:use|run|build|compile|make|ninja|cmake|export|env|start|kick(?: it)? off|do|with|at|give it|only|just|max"
    r"|force(?: an?)?"
    r"|(?:just )?(?:add|append|set)"
    r"|disable|turn off|switch off"
    r"|pass|(?:have|let|make) (?:it|BUILD|them) use|(?:go )?back to"
    r"|at most|no more than|up to)\b"
    # "build still runs on 4 cpus", "make is using 8 cores": the noun told about, not the verb that asks
    r"(?! (?:still|is|was|were|has|had|keeps|kept|runs|ran|uses|used|seems|only uses|now uses|takes|took"
    r"|is using|was using|is running|was running|goes|went|gets|got|hangs|fails|failed|dies|died)\b)"
)
# "halve the jobs", "fewer jobs", "lower -j": a relative change rigops cannot compute from chat alone.
MORE_WORDS = frozenset({"double", "more", "increase", "bump", "raise"})
RELATIVE_JOBS_RE = re.compile(
    r"\b(?:halve|half|halving|fewer|less|lesser|lower|reduce|decrease|cut|drop|double|more|increase|bump|raise)"
    r"(?: the| down| back| our| its)?(?: (?:number of|no\.? of|amount of))?"
    r" (?:jobs|parallelism|parallel jobs|-j|threads|cores|workers|procs|max_jobs|j)(?![\w])(?! than\b)"
    r"(?: (?:to|down to) ([0-9]+)(?![\w]))?"
    r"|^(?:go|try|run it|do it) (?:lower|smaller|down a notch|with less|with fewer)\b(?! than\b)"
)
