"""Speech acts, for ``bot.language.intents``: is a clause a request, a question about now, or something that never acts?

Only requests ("kill it", "try -j8", "can you rebuild vllm") and questions about now ("is vllm still alive?",
"how much RAM is left?") act. A clause that tells a story, gives advice, reports the past, supposes, negates,
is about somebody else's build, or asks how things work in general is read and left alone, and ``act_of`` says
which of these it is, so that ``rigops explain`` can say why nothing happened.

The cues are grammatical, not phrase lists of examples: the opening of the clause (an imperative verb or a
request lead-in keeps it a request whatever follows), tense and time words, modal and conditional words,
generic "you", third parties, and question words about meaning. All patterns are bounded alternations.
"""

from __future__ import annotations

import re
from typing import Literal

from bot.language.intents_words import BEFORE_A_DELAY, MINE_TO_DO, NEGATIONS

Act = Literal["story", "advice", "hypothetical", "negation", "other-team", "how-to", "report", "to-someone",
              "statement", "pasted-log", "rhetorical", "unsure", "unsure-look", "learned", "poll"]

WHY: dict[str, str] = {
    "story": "it reads as a story (something that happened before, or a habit)",
    "advice": "it reads as advice or a general remark, not a request",
    "hypothetical": "it reads as a supposition (if, could, would, once …), not a request",
    "negation": "it says not to, or that there is no need",
    "other-team": "it is about somebody else's build or machine",
    "how-to": "it asks how things work in general, not for this build now",
    "report": "it reports what was done or seen, and asks for nothing",
    "to-someone": "it is said to somebody else (it opens by naming them)",
    "statement": "it says what someone does or finds, and asks for nothing",
    "pasted-log": "it introduces pasted output, and asks for nothing",
    "rhetorical": "it is a rhetorical question, not a request",
    "unsure": "the rules read a kill or a rebuild in it, but the learned reading does not read a request to act "
              "(said to rigops, it is offered as 'Did you mean …?')",
    "unsure-look": "the rules read a look in it, but the learned reading reads it surely as asking for nothing (a "
                   "report or a remark with the look's words in it)",
    "poll": "it asks people to choose or weigh in ('… — which one?', 'thoughts?', 'y/n'), not rigops to act",
    "learned": "no rule reads a request in it; the learned reading reads this one, with the names and the count it "
               "says",
}

# A clause that opens with one of these verbs is an order, whatever else it says.
IMPERATIVE_RE = re.compile(
    r"^(?:kill|stop|abort|cancel|halt|terminate|nuke|rebuild|retry|rerun|restart|relaunch|start over|try"
    r"|drop|lower|reduce|cut|bump|raise|limit|cap|throttle|set|use|run|go|do|give|show|post|paste|send|get"
    r"|grab|dump|tail|check|look at|print|pull|fetch|share|tell me|let me know|graph|plot|chart|draw|return"
    r"|display|list|monitor|watch|indicate|report|pull up|bring up|redo|yank|force-kill|force-stop|force"
    r"|decrease|increase|pin|restrict|bound|switch|change|scale|dial|recompile|reinstall|recreate|wipe|clean|fix"
    r"|pass|feed|hand|apply|export|output|view|open|read|keep an eye on|keep watching|track"
    r"|status|mem|memory|gpu|gpus|nvidia-smi|log|logs|free -h|progress|eta)\b"
)

# --- stories and reports of the past -------------------------------------------------------------------

# Irregular and common regular past forms of what builds and people do, as the main verb of a clause.
PAST_VERB_RE = re.compile(
    r"\b(?:died|crashed|failed|oomed|oom'd|blew up|worked|went (?:through|fine|ok|okay|away|well)|fixed"
    r"|resized|capped|hardcoded|hard-coded|lowered|raised|bumped|switched|tried|took|hit|finished|built"
    r"|succeeded|passed|froze|freezed|hung|stopped|terminated|rebuilt|restarted|reinstalled|installed"
    r"|upgraded|downgraded|added|removed|disabled|enabled|changed|found|noticed|saw|figured|realized"
    r"|realised|was able|managed|ended up|gave up|solved|resolved|compiled|ran out|used to|started|happened"
    r"|turned out|helped|made it|nuked|killed (?:it|the|my|our|that|them)|kept (?:dying|crashing|failing)"
    r"|told|said|wrote|posted|mentioned|reported|filed|opened|merged|landed|reverted|confirmed|sorted(?: it| that)?"
    r"|did (?:nothing|the trick|it|not help)|got it through|suggested|recommended)\b"
)
# What makes a past form still about now: "it died again", "just OOMed", "keeps dying".
PRESENT_RE = re.compile(
    r"\b(?:again|just|just now|right now|now|still|currently|keeps|keep|rn|atm|at the moment|as we speak"
    r"|is|are|am|'s|'re)\b"
)
# Time words of a story: "this morning", "at my old job", "overnight".
STORY_TIME_RE = re.compile(
    r"\b(?:this morning|this afternoon|last night|overnight|earlier today|the first time|the other week"
    r"|over the weekend|last weekend|this weekend|on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|a while back|a few (?:days|weeks|months) back|in the past|previously|at my (?:old|last|previous) job"
    r"|back at|once upon|in my experience|on my (?:end|laptop|machine|box|desktop|pc|mac)|on my \w+ (?:laptop"
    r"|machine|box|desktop)|at home|when i (?:was|did|tried|built|ran))\b"
)

# --- advice and general remarks ------------------------------------------------------------------------

# Said to an audience, or quoting docs: the whole message is advice ("FYI for anyone building on a laptop: …").
# How somebody else's words are brought in: "someone on reddit said 'just rerun X'", "the docs say: …".
_SAID = (r"(?:said|says|say|suggested|suggests|recommended|recommends|wrote|writes|claimed|claims|advised|advises"
         r"|told (?:me|us|them)|posted|replied|answered)")
AUDIENCE_RE = re.compile(
    r"\b(?:fyi|psa|heads up|pro tip|protip|tip|note|reminder|hint|advice)\b[^.?!\n]{0,12}?\b(?:for|to)\b"
    r" (?:anyone|anybody|everyone|everybody|people|folks|those|the new|newcomers|others|new folks|whoever"
    r"|you all|y'all|all)\b"
    r"|\bfor (?:anyone|anybody|everyone|everybody|those|the new folks|newcomers|whoever|people)"
    r" (?:who|that|building|on|with|using|hitting|running|trying|seeing|reading)\b"
    r"|\b(?:from|per|according to) the (?:docs|documentation|readme|manual|wiki|faq|guide|man page)\b"
    # "in the docs: …", not "sorry if this is already in the docs"
    r"|(?<!\bis )(?<!\balready )\bin the (?:docs|documentation|readme|manual|wiki|faq|guide|man page)\b"
    r"(?! but\b)"
    r"|\b(?:the )?(?:docs|documentation|readme|manual|wiki|faq|guide) (?:says|say|said|recommends|suggests)\b"
    r"|^(?:psa|pro tip|protip|tip|til|fwiw|lesson learned|note to self|whoever|rule of thumb|for the record"
    r"|(?:general |my |some |a word of |word of )?advice|(?:a |quick |hot |life pro )?tip|lpt)\b"
    # somebody else's words quoted: "someone on reddit said 'just rerun X with MAX_JOBS=4'"
    rf"|\b{_SAID}[:,]? [\"'\u201c\u2018]"
    r"|^(?:on|for) (?:(?:a|an|any|small|smaller|weaker) )?(?:machine|box|host|system|node|laptop|server"
    r"|workstation|vm)s? with (?:\d|only|less|under|just)"
    r"|\b(?:anyone|anybody|whoever|someone|people) who (?:builds|rebuilds|restarts|runs|kills|compiles)\b"
    # a recipe or a Q&A told: "step 1: kill X. step 2: rebuild at 4", "Q: should we kill X? A: probably not"
    r"|^step (?:1|one)\b[^\n]{0,80}\bstep (?:2|two)\b|^step (?:\d{1,2}|two|three|four|five) ?[:.)-]"
    r"|^q: [^\n]{0,120}\ba: "
    r"|^(?:todo|to-do|to do)(?: list)?(?: for (?:later|tomorrow|monday|next week))?:"
    # "pending approval: rebuild X at 4", "proposal: …", "suggestion for later: …"
    r"|^(?:pending (?:approval|review)|proposal|proposed|suggestion|idea|plan|draft|rfc|option (?:a|b|1|2))"
    r"(?: for (?:later|tomorrow|next time|the future))?:"
    r"|^(?:commands|steps|instructions|how|ways|options) to [a-z ]{2,30}:"
    # a fix told under its label: "Solution: rebuild X with MAX_JOBS=4", "TL;DR rebuild X at 4", "BUILD tip: …",
    # "what fixed it for me: …", "for posterity: …", "docs: `MAX_JOBS=4 pip install X`", "general rule: …"
    r"|^(?:the |a |my |our )?(?:(?:canonical|standard|usual|known|real|simple|easy|quick|proper|actual|only|general"
    r"|recommended|suggested|accepted|official) )?(?:solution|fix|workaround|answer|resolution|remedy|cure|rule"
    r"|recommendation|way)s? ?(?:is )?[:\-—–]"
    r"|^(?:tl;?dr|tldr)\b|^(?:recommended|fwiw|for posterity|docs|the docs|readme|the readme|solved|fixed"
    r"|answer|(?:BUILD |HOST |build |oom |memory )?tips?"
    r"|note for (?:future me|myself|later|the future|next time|others)"
    r") ?[:\-—–]|^what (?:fixed|solved|worked|helped)(?: it| this)?(?: for (?:me|us))? ?[:\-—–]"
    r"|^(?:anyone|anybody) else (?:seeing|hitting|getting|running into|with) (?:this|the same|that)\b"
    r"|\bfor (?:anyone|anybody|everyone|those|others) else\b"
    # a fix vouched for, not asked: "… Worked for me.", "… works every time", "confirmed working on 64GB"
    r"|\b(?:worked|works|working) (?:every time|like a charm)\b"
    r"|\bconfirmed (?:working|to work|it works)\b|\b(?:fixes|solves) (?:it|this|the (?:oom|issue|problem|error))\b"
    r"|\bit'?s not rocket science\b|\b(?:as )?per (?:the )?(?:docs|documentation|readme|manual|wiki)\b"
    r"|\b(?:docs|documentation|readme|manual|wiki) (?:literally |clearly |explicitly |even )?(?:says|say|said"
    r"|tells you)\b"
)
YOU_ASKED_RE = re.compile(r"^you (?:need to|should|have to|must|gotta|got to)\b")
# Said to whoever reads, not to rigops: "you should kill X and rebuild with -j4", "you need to rebuild X at 4".
YOU_SHOULD_RE = re.compile(r"(?:^|[.!?;,:—–-]\s*)(?:so |and |then |but |honestly |imo )?you (?:really |probably "
                           r"|definitely |just |also |first )?(?:should|need to|have to|must|gotta|got to|want to"
                           r"|'ll (?:want|need|have) to|'d (?:want|need|have) to)\b")
# Generic "you": a rule about how things behave, not a request to this channel.
GENERIC_RE = re.compile(
    r"\b(?:when|whenever|if|once|every time|each time) (?:you|one|people|someone|anyone) (?:see|get|hit"
    r"|run|build|use|have|try|notice|find|are|do)\b"
    # (not "when you run nvidia-smi on X, what does it show?": asked to see it)
    r"(?![^?]*\bwhat (?:does|do|did) (?:it|they|that) (?:show|say|print|output|report)\b)"
    r"|\b(?:you|one) (?:can|could|may|might|should|need to|have to|must|want to|'ll|will|would) "
    r"(?:just |always |also |usually |probably |now )?(?:set|use|try|pass|add|export|limit|reduce|lower|cap|run|do"
    r"|build|see|check|get|avoid|bump|increase|drop|restart|kill)\b"
    r"|\b(?:your|yours) (?:environment|env|machine|box|laptop|build|setup|system|end|config|shell|ram)\b"
    r"|\b(?:means|meant|implies|indicates|is (?:usually|typically|often|probably|almost always|most likely)"
    r"|(?:most|much) of the time|as a side effect|in general|generally|rule of thumb|per core|per job"
    r"|is deprecated|is consistent with|by default|the default is|for instance|for example|e\.g\.|known issue)\b"
    r"|\b(?:keeps|keep) (?:it|things|the box|the machine) (?:alive|happy|stable|safe|going)\b"
    r"|^(?:most|many|some|a lot of) (?:people|folks|users|devs|of us)\b|^(?:everyone|everybody) (?:\w+s)\b"
    r"|\b(?:trick|fix|solution|workaround|answer|way|idea|recipe|rule|cure|remedy|key) (?:is|was|here is)"
    r" (?:just )?to\b|\bwhat (?:worked|works|helped|helps)(?: for me| for us)? (?:is|was)\b"
    # "my kneejerk reaction is to kill X": an urge told, not acted on
    r"|\b(?:my|our|the) (?:\w+ )?(?:reaction|instinct|inclination|gut|first thought|impulse|urge|temptation)"
    r" (?:is|was|would be|says) to\b"
    # "for vllm the usual drill is kill, then rebuild at 4": what is done as a rule, told
    r"|\b(?:usual|standard|normal|typical|regular|general|canonical|common|accepted|recommended) (?:drill|routine"
    r"|procedure|process|fix|move|practice|rule|answer|way|approach|solution)\b"
    r"|\b(?:drill|routine|procedure|playbook|runbook|rule of thumb) (?:is|was|says|goes)\b"
)

# --- suppositions --------------------------------------------------------------------------------------

# A request for later, on a condition that has not happened: "if the problem persists", "if it dies again",
# "next time X OOMs, …", "whenever it hangs, …". Even an imperative with it asks for nothing now.
LATER_CONDITION_RE = re.compile(
    r"\b(?:if|when|once|in case) (?:the (?:problem|issue|error|oom|crash)|it|this|that|BUILD|the build|HOST)"
    r" (?:still )?(?:persists|continues|keeps (?:happening|coming back|failing|dying|crashing)|happens again"
    r"|comes back|recurs|fails again|dies again|ooms again|crashes again|hangs again|breaks again"
    r"|oom'?s again|gets killed again|runs out of memory again)\b"
    r"|^(?:the )?next time\b|^(?:whenever|every time|each time)\b"
    # an event to wait for: "kill it if it hangs", "should X die overnight, …", "after the tests pass, …",
    # "when memory frees up, …" (a state now stays a request: "kill it if it's stuck")
    r"|\b(?:if|when|whenever|once|in case) (?:it|this|that|BUILD|the build|HOST|the compile|the compiler|ninja|make"
    r"|nvcc|cc1plus|the job|the linker|ld|the install) (?:ever )?(?:hangs|stalls|gets stuck"
    r"|freezes|ooms|oom's|dies|fails|crashes|breaks|gets killed|runs out of memory|starts swapping|swaps)\b"
    r"|^should (?:it|BUILD|the build|HOST) (?:ever )?(?:die|fail|crash|oom|hang|break|get killed|run out|stall)\b"
    # … or after the request: "restart X after the current run finishes", "rebuild X when the tests pass"
    r"|(?:^|\s)(?:after|once|when|as soon as) (?:the |its |BUILD's |this |that |my |our |current |other |first )*"
    r"(?:tests?|build|BUILD|it|compile|install|job|run|memory|ram|HOST|ci|pipeline|one)"
    r"[^,;]{0,30}? (?:pass|passes|passed|finish|finishes|is done|are done|is finished|are finished|is complete"
    r"|are complete|completes|wraps up|ends|frees up|is free"
    r"|comes back|recovers|settles|calms down|lands|is merged|gets merged|is over)\b"
    # a time to come: "restart X at -j4 at some point this week", "kill it tomorrow", "later tonight"
    r"|\b(?:tomorrow|tmrw|next (?:week|month|sprint|monday|tuesday|wednesday|thursday|friday)"
    r"|later (?:this|today|tonight|on|in the (?:day|week))|(?:at some point|some ?time) (?:this|next|later|soon)"
    r"|before (?:the )?(?:release|freeze|weekend)|some ?day|one of these days"
    # a time of day or a delay: "kill X at 5pm if it's still running", "restart it in 20 min"
    r"|at (?:~|about |around )?\d{1,2}(?::\d\d)? ?(?:am|pm)|at (?:~|about |around )?(?:noon|midnight)|tonight"
    r"|this (?:evening|afternoon)"
    rf"|{BEFORE_A_DELAY}in (?:\d+|a few|ten|twenty|thirty) ?(?:min|mins|minutes|hours?|h))\b"
)
# A habit's times: "rebuild X at 8 on fridays", "we kill it every night", "restart it daily".
HABIT_TIME_RE = re.compile(r"\b(?:on (?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|weekends"
                           r"|weekdays)"
                           r"|every (?:day|night|morning|evening|week|weekend|month|hour|monday|tuesday|wednesday"
                           r"|thursday|friday|saturday|sunday|release|sprint|other day)"
                           r"|each (?:day|night|morning|evening|week|release)|daily|weekly"
                           r"|nightly (?:at|before|after))\b")
HYPOTHETICAL_RE = re.compile(
    # "check if HOST is swapping": what to look at, no condition ("wanna see if it got killed" stays one)
    r"\b(?:(?<!\bcheck )(?<!\bverify )(?<!\bconfirm )"
    r"if(?! (?:possible|you can|you could|you don't mind|you do not mind|that's ok|that is ok|convenient"
    r"|you have a (?:sec|second|minute|moment))\b)|unless|once(?! (?:more|again|over))|whenever|in case|assuming"
    r"|suppose|supposing|what if"
    r"|when(?= (?:it|the|we|BUILD|HOST)"
    r" [^?]*\b(?:ever|again|eventually|next|finally|lands|arrives|comes|gets)\b))\b"
    r"|\b(?:we|i|you|they|one|it) (?:could|would|might|may|'d|should probably)\b"
    r"|\b(?:could|would|might) (?:try|be|have|want|need|consider)\b"
    r"|\b(?:we'd|i'd|you'd|they'd|it'd)\b|\bmaybe (?:we|someone|somebody|i) (?:could|should|can)\b"
    r"|\b(?:worth (?:trying|a try|considering|reading|a look)|might be worth)\b"
)

# --- negations -----------------------------------------------------------------------------------------

NEGATED_RE = re.compile(
    rf"\b(?:{NEGATIONS}|isn't|isnt|aren't|arent|wasn't|doesn't|doesnt|didn't|didnt|nothing to|no point|not necessary"
    r"|unnecessary|hold off|leave it|let it (?:run|be|finish|go)|no (?:oom|ooms|swap|swapping)"
    # "nobody kill X, it's at 99%", "kill X = bad idea right now"
    r"|nobody|no one|noone|(?:a |an )?(?:bad|terrible|horrible|dumb|awful) idea|not a good idea"
    # "stop killing X", "quit restarting it", "enough with the rebuilds": what is being done, asked to end
    r"|(?:stop|quit|cease|enough with|no more) (?:the )?(?:killing|restarting|rebuilding|rerunning|retrying|rebuilds"
    r"|restarts|kills|messing with|touching))\b"
)

# "not b200", "not sure", "not just": the negation is of a name or a hedge, not of what is asked.
NOT_AN_ACTION_RE = re.compile(r"\b(?:not|no) (?:HOST|BUILD|sure|just|only|yet sure|that one|this one|ours|mine)\b"
                              r"|\b(?:if|or|whether) not\b"
                              # a purpose said after the request: "rebuild X at 2 to make sure it doesn't oom"
                              r"|\bto (?:be sure|make sure|ensure|check|confirm|verify)\b.*")

# --- somebody else's build -----------------------------------------------------------------------------

THIRD_PARTY_RE = re.compile(
    r"\b(?:they|they're|their|theirs|them|he|she|his|her|him)\b"
    r"|\b(?:the )?(?:[\w.-]+ )?(?:folks|people|guys|team|devs|developers|maintainers|users|upstream|crew)"
    r"(?:'s|'|s')?(?= |$)"
    r"|\b[a-z]+'s (?:laptop|machine|box|build|ci|runner|desktop|pc|mac)\b"
    r"|\b(?:not ours|someone else's|somebody else's|other team|another team|in ci|ci runs?|ci runners?"
    r"|the runners?|github actions|buildfarm|build farm|jenkins|gitlab ci|their ci|the ci)\b"
    r"|\b(?:[\w.-]+ )?ci\b(?! (?:please|pls))"
)

# --- general questions ---------------------------------------------------------------------------------

# Whether the speaker may, or how: "can i retrigger the X build?", "can I just rebuild X with enough ram?".
MAY_I_RE = re.compile(r"^(?:(?:so|ok|and|but|or) )?(?:can|could|may|shall|should|do) i (?:just |simply |now |still "
                      rf"|safely |go ahead and |need to )?{MINE_TO_DO}\b"
                      # "is there a way I can bypass the download and recompile X?": the speaker's own way
                      r"|^(?:is there|there is|any) (?:a |an |some )?(?:way|option|command) (?:i|we)"
                      r" (?:can|could|might)\b"
                      r"|^(?:is there|any) (?:a |an )?way for (?:me|us) to\b")

SELF_HOW_TO_RE = re.compile(r"^how (?:do|can|would|should|could) (?:i|we|one)\b.*\b(?:kill|stop|abort|cancel"
                            r"|rebuild|restart|rerun|retry|relaunch)\b|\b(?:myself|ourselves|by hand|manually)\b"
                            rf"|{MAY_I_RE.pattern}")
# "why would anyone rebuild X at -j128?", "who in their right mind kills …": a question that asks for nothing.
RHETORICAL_RE = re.compile(r"^(?:why (?:would|on earth would|the hell would) (?:anyone|anybody|you|someone)"
                           r"|who (?:in their right mind|would ever|on earth)"
                           r"|are you (?:sure|certain|positive)(?! (?:you can|it's ok to)))\b"
                           r"|\bin this economy\b")
# "can someone explain why the rebuild at -j8 is slower than at -j4?": a question of why, said to anyone; "could a
# rebuild of X at 4 fix the OOM?", "would lowering the jobs help?": whether something would work, asked.
EXPLAIN_RE = re.compile(r"^(?:(?:can|could|would) (?:someone|somebody|anyone|anybody|you) )?explain (?:to me |to us )?"
                        r"(?:why|how|what)\b"
                        # "rebuild X with what -j?": the count asked about, not given
                        r"|\b(?:with|at|using|to) (?:what|which|how many) (?:-j|jobs|count|parallelism|threads|cores)\b"
                        # "what's the command to rebuild X at 8?", "where do I set -j8 for X?": how, asked (of
                        # rigops too)
                        r"|^what is the (?:command|cmd|flag|option|syntax|setting|env var|variable|knob) (?:to|for)\b"
                        r"|^what (?:command|cmd|flag|option|setting) (?:kills|stops|rebuilds|restarts|sets|makes"
                        r"|do i|should i)\b"
                        r"|^where (?:do|can|should|would) (?:i|we|one) (?:set|put|change|configure|find|pass|add)\b"
                        # what a build needs, asked in general: "how much space does the build need on HOST?"
                        r"|^how much (?:disk|disk space|space|memory|ram|vram|time)(?: in total)? (?:does|do|will|would"
                        r"|should) [^?]{0,40}\b(?:need|require|take to (?:build|compile|link|finish))\b"
                        r"(?![^?]*\b(?:now|currently|at the moment|atm)\b)"
                        # whether it is safe: "is it safe to restart X at 4?", "can X be killed safely?"
                        r"|^is it (?:safe|ok|okay|fine|alright|wise|a good idea|risky|dangerous) to\b"
                        r"|^(?:can|could|is) [^?]{0,40}\b(?:safely|safe to (?:kill|stop|restart|rebuild))\b"
                        # what the bot can do, asked of people: "can rigops rebuild X at 8 or does it only do defaults?"
                        r"|^(?:can|could|does|will|would|is|should) (?:rigops|the bot|our bot|this bot|the ops bot)\b"
                        r"|^(?:could|would|will|does|did|might|can|is|should) (?:a |an |the |another |one more )?"
                        r"(?:re-?build|restart|rerun|retry|kill|killing|rebuilding|restarting|rerunning|retrying|lowering"
                        r"|reducing|dropping|bumping|raising|switching|cutting|limiting|capping)\b[^?]*"
                        r"\b(?:fix|help|solve|work|change|matter|make (?:a|any) difference|do anything|cure|be enough"
                        r"|be worth)\b")
HOW_TO_RE = re.compile(
    r"^(?:how (?:do|can|would|should|to|does one)|any idea how|anyone know how|does anyone know|do you know how"
    r"|is there a way|what is the (?:best|right|recommended) way|why does|why do|why is it"
    r"|what happens|is it (?:normal|expected|safe|possible)|should (?:i|one) (?:use|set))\b"
    rf"|{MAY_I_RE.pattern}"
    r"|\b(?:how to|what (?:does|do) [^?]{1,40} (?:mean|stand for)|vs\.? free)\b"
)


# "i find i must set …", "we just kill the build": a person saying what they do; "we need to", "i want" ask.
STATEMENT_RE = re.compile(
    # "about to restart X at 4, shout if not": what the speaker is about to do
    r"^(?:(?:i'm|im|i am|we're|we are) )?(?:about to|fixing to|on my way to)\b|"
    r"^(?:(?:in|on|at|for|with|here|there|locally|usually|normally)(?: [a-z0-9-]+){0,2} )?(?:i|we|you|they"
    r"|one(?! (?:more|last|other|of)\b))"
    r"(?: (?:just|also|always|often|then|still|usually|sometimes|normally|only))?"
    r" (?!(?:need|needs|want|wanna|would like|'d like|should|must|gotta|have to|got to|better|can|could"
    r"|will|'ll|may|might|am|are|'m|'re)\b)[a-z']+"
)

# An order given as an example, or to whoever reads: "just set MAX_JOBS=4 for instance", "try -j4 in your env".
EXAMPLE_RE = re.compile(
    r"\b(?:for instance|for example|e\.g\.|i\.e\.|say,|in your (?:environment|env|shell|config|setup|case)"
    r"|on your (?:end|side|machine|box|laptop)|your (?:build|machine|box|laptop|environment))\b"
    # a kind of machine, not one of ours: "when building on a laptop", "on machines with 16GB", "for a small VM"
    r"|\b(?:on|for|with) (?:a |an |any |small |smaller |weaker |low-end )*"
    r"(?:laptops?|desktops?|notebooks?|workstations?"
    r"|(?:small |tiny )?vms?|machines? with|boxes with|systems? with|hosts? with|computers? with)\b"
    r"|\b(?:on|for|with) (?:smaller|weaker|tiny|low-end|low-memory|low-ram|older) (?:boxes|machines|hosts|nodes|systems"
    r"|computers|servers|gpus)\b"
)
BY_ONESELF_RE = re.compile(r"\b(?:myself|ourselves|on my own|on our own)\b")
# Somebody's words, with who said them after: "kill X they said", "rebuild at 64, said no one ever".
SAID_AT_END_RE = re.compile(r"\b(?:they|he|she|someone|somebody|nobody|no one|said no one|said nobody)"
                            r" (?:said|says|told (?:me|us)|ever)\W*$")
# The speaker's own machine or environment: "rebuild X at 8 on my laptop", "kill it in my container".
MY_MACHINE_RE = re.compile(r"\b(?:on|in|inside) my (?:own |local |personal |work |home )?(?:laptop|box|machine|desktop"
                           r"|pc|mac|macbook|workstation|container|vm|docker|env|environment|venv|conda env|fork"
                           r"|branch|computer|rig|setup|wsl|terminal|shell)\b")
# What a request would mean, said as an equation: "kill X = pain", "rebuild at 64 = OOM" (not "MAX_JOBS = 4").
EQUATES_RE = re.compile(r"(?<![=<>!])(?<!jobs )(?<!threads )(?<!level )(?<!-j )(?<![_a-z0-9]) ?= ?(?![=>])"
                        r"(?=[a-z])(?!\$)")
# An aside in parentheses (to the clause's end when it is not closed there).
ASIDE_RE = re.compile(r"\([^()]*(?:\)|$)")
# A name followed by these is another party's: "llama.cpp CI", "the vllm folks", "flash-attn upstream".
THEIRS_AFTER_NAME_RE = re.compile(
    r"\b(?:BUILD|HOST)(?:'s)? (?:ci|upstream|folks|people|team|devs|developers|maintainers|repo|project|docs"
    r"|readme|issue tracker|discord|community|users)\b"
)


def names_ours(clause: str) -> bool:
    """The clause names a config host or build as ours (not "llama.cpp CI", "the vllm folks")."""
    return ("HOST" in clause or "BUILD" in clause) and not THEIRS_AFTER_NAME_RE.search(clause)


# How a request is put softly, as a supposition: "maybe we could", "you might want to", "i guess we should".
SOFT_LEAD_RE = re.compile(
    r"^(?:(?:maybe|perhaps|i guess|i think|probably) )?(?:we|you|i|someone|somebody|one) (?:could|should|might"
    r"|can|may|would|'d)(?: (?:probably|maybe|just|also))?(?: (?:want to|wanna|try to|need to|have to|like to))?"
    r"(?: try)? "
)

# A request verb that is the subject of what follows: "tail shows the last 500 lines", "rebuild failed at -j32",
# "kill didn't work": the clause tells what the tool or the step did, it asks for nothing.
VERB_AS_SUBJECT_RE = re.compile(
    r"^(?:(?:(?:the|our|its|this|that|BUILD(?:'s)?|HOST(?:'s)?) )+(?:build )?(?:log|logs|output|tail)"
    r"(?: (?:on|for|of|from) (?:HOST|BUILD))?"
    r"|tail|cat|log|logs|output|kill(?: -9| -kill| -term)?(?: on)?(?: the)?(?: BUILD)?"
    r"(?: cc1plus| process| processes| job| ninja| nvcc| compiler| pid)?"
    r"|stop|rebuild|restart|retry|rerun|build|check|status|free -h|nvidia-smi)"
    # "rebuild at -j4 failed too", "rebuild BUILD -j4 was the fix"
    r"(?: (?:(?:at|with|of|for|on|using) )?(?:-j ?\d+|j\d+|\d+ jobs|BUILD|HOST|it)){0,3}"
    r" (?:only |just |still |also |again |now )?(?:shows|showed|says|said|gives|gave|prints|printed|has|had|is|was"
    r"|returns|returned|cuts|cut off|stops|stopped|ends|ended|failed|fails|died|dies|finished|succeeded|took|takes"
    r"|worked|works|hung|hangs|crashed|crashes|didn't|doesn't|did not|does not|isn't|wasn't|won't|can't|never)\b"
)
# A gerund that is the subject: "re-running the command seems to purge everything", "restarting it never helped".
GERUND_SUBJECT_RE = re.compile(
    r"^(?:re-?running|re-?starting|re-?building|re-?trying|killing|stopping|running|building|compiling)"
    r"(?: (?:the|it|that|this|BUILD|HOST|my|our))?[^,;]{0,40}? (?:seems|seemed|is|was|does|did|makes|made|just|only"
    r"|always|never|didn't|doesn't|won't|fixes|fixed|helps|helped|takes|took|purges|purged|wipes|wiped|starts"
    r"|started|ends up|ended up|gives|gave)\b"
)
# A question about the build's recent past is a look: "what failed?", "did it finish?", "where did it die?".
# A question asked without its question mark ("whats the status of X", "anything running on the gpus of HOST"):
# how it opens says so.
QUESTION_START_RE = re.compile(r"^(?:what|whats|which|where|wheres|why|when|did|does|do|has|have|is|are|was|were|how"
                               r"|hows|any|anything|anyone|who|whos)\b")


def act_of(clause: str, *, addressed: bool, imperative: bool, has_names: bool, trouble: bool = False) -> Act | None:
    """What a clause is when it is not a request or a question about now; None when it may act.

    ``imperative``: the clause opens with a request verb or lead-in ("kill", "can you", "pls"), which keeps
    it a request against the cues of a story or a supposition that come after it. ``has_names``: the clause
    names one of the config's hosts or builds (a third party's build is not ours; ours is). ``trouble``: the
    clause tells of memory trouble ("cc1plus got killed"), which is news about now unless a time word says not."""
    if NEGATED_RE.search(NOT_AN_ACTION_RE.sub(" ", clause)) and not _negation_is_elsewhere(clause):
        return "negation"
    if EXPLAIN_RE.search(clause) or (HOW_TO_RE.search(clause) and (not addressed or SELF_HOW_TO_RE.search(clause))):
        return "how-to"  # said to rigops, "how do I rebuild X myself?" asks how, not for a rebuild
    if RHETORICAL_RE.search(clause):
        return "rhetorical"
    if EXAMPLE_RE.search(clause):
        return "advice"
    if BY_ONESELF_RE.search(clause) and not QUESTION_START_RE.match(clause):
        return "statement"  # "I'd like to stop just the idle stuff myself": the speaker does it, rigops does not
    if SPEAKER_DOING_RE.match(clause):
        return "statement"  # "I am currently running a compilation job … with MAX_JOBS=1": what the speaker does
    if SAID_AT_END_RE.search(clause):
        return "story"  # "kill X they said": somebody's words, told
    if MY_MACHINE_RE.search(clause):
        return "other-team"  # "rebuild X at 8 on my laptop": the speaker's own machine, not one of rigops' hosts
    if EQUATES_RE.search(ASIDE_RE.sub(" ", clause)):  # not in an aside: "lower X to 8 (fewer nvcc = lower rss)"
        return "statement"  # "kill X = the whole team loses a day": what it would mean, not a request
    if imperative:
        return None
    if STORY_TIME_RE.search(clause):
        return "story"
    if GENERIC_RE.search(clause) and not (addressed and YOU_ASKED_RE.match(clause)):
        return "advice"  # said to rigops, "you need to run X with -j 12" asks it
    if HYPOTHETICAL_RE.search(clause):
        return "hypothetical"
    if THIRD_PARTY_RE.search(clause) and not has_names:
        return "other-team"
    if STATEMENT_RE.match(clause) and not trouble:
        return "statement"
    if (PAST_VERB_RE.search(clause) and not PRESENT_RE.search(clause) and not trouble
            and not QUESTION_START_RE.match(clause)):
        return "report"
    return None


def _negation_is_elsewhere(clause: str) -> bool:
    """ "not sure, kill it" is split before here; "is it not done yet?" still asks about now; "check that HOST isn't
    swapping" asks for a look at what it says is not so."""
    return bool(re.match(r"^(?:is|isn't|has|hasn't|did|didn't|why) (?:it|the build|BUILD|HOST)? ?(?:not )?", clause)
                and clause.rstrip().endswith("yet")) or bool(CHECK_THAT_NOT_RE.match(clause))


# A look at what should not be so: "double check BUILD's memory isn't too much", "make sure HOST isn't swapping",
# "verify that BUILD hasn't hung" (never "make sure you don't kill it": what not to do stays a negation).
CHECK_THAT_NOT_RE = re.compile(
    r"^(?:(?:please|pls|can you|could you|can someone|could someone|someone) )?(?:double[- ]?check|check|verify"
    r"|confirm|make sure|ensure|see if|see whether|find out if|find out whether)(?: that| if| whether)?"
    r"(?: [\w'-]+){1,6}?"
    r" (?:isn't|is not|aren't|are not|hasn't|has not|haven't|wasn't)\b(?!.*\b(?:kill|stop|rebuild|restart|rerun"
    r"|retry|touch|abort|cancel)\b)")


# What the speaker is doing now, told: "I am currently running a compilation job that goes fine with MAX_JOBS=1",
# "we're building X at 8 on our side" (never "we're running out of memory": trouble, news).
SPEAKER_DOING_RE = re.compile(r"^(?:i|we)(?: am|'m| are|'re)(?: (?:currently|now|still|already|just|actually))*"
                              r" (?:running|building|compiling|testing|doing|using)\b(?! (?:out|low)\b)")
# A vote for what someone proposed: "+1 to bump the timeout and get X built", "👍 to that", "agreed on rebuilding
# at 8", "seconding the restart" (said to rigops too: a vote, not the deed asked of it).
VOTE_RE = re.compile(r"^(?:\+1|\+100|agreed?|seconded|i second|seconding)\s*(?:,\s*)?(?:to|on|for|with)\b"
                     r"|^(?:\+1|\+100)\s*[,.!:]*\s*(?:$|\n)")
# A message that ends by asking people to choose or weigh in: "kill X or restart it at 4 — which one?",
# "restart X at 4 vs 8, what do you think?", "rebuild X at 4? y/n".
POLL_RE = re.compile(r"(?:^|[,.;:!?—–-] ?)(?:so )?(?:which one|which|thoughts|any thoughts"
                     r"|what do (?:you|you guys|y'all|people|folks) think|opinions|ideas|y/n|yes or no|agree"
                     r"|yes/no|\(y/n\)|\(yes/no\)|go or no[ -]go|go/no[ -]go|✅ ?/ ?❌"
                     r"|your call|up to you|you decide|you choose|dealer's choice|i don't care|idc|whatever"
                     r"|objections|any objections|votes?|\+1s?)\s*\?*\s*$"
                     # "restart X at 4 — approved?": asked of the people, with its question mark
                     r"|(?:^|[,.;:!?—–-] ?)(?:approved|good to go|lgtm)\s*\?+\s*$"
                     r"|\((?:y/n|yes/no|yes or no)\)\s*\?*\s*$")
# ... and to the channel, "…, ok?", "sounds good?": said to rigops, a request with a courtesy
ASKED_OK_RE = re.compile(r"(?:^|[,.;:!?—–-] ?)(?:ok|okay|sounds? good|fine|alright|cool)\s*\?+\s*$")


# The people a message opens by naming, in plain text: "alice, bob: kill X", "dave and sam — rebuild it at 8";
# and who it asks, said after it: "ok so kill X then? (asking alice)".
PEOPLE_OPENING_RE = re.compile(r"^(?P<who>[a-z][a-z'-]{1,15}(?:(?:, ?| and | & |/)[a-z][a-z'-]{1,15}){1,4})"
                               r" ?(?::|—|–| - )")
ASKING_SOMEONE_RE = re.compile(r"\((?:asking|q for|question for|for|cc|@) ?@?(?!BUILD|HOST|rigops)[a-z][a-z'-]{1,15}"
                               r"\)\s*[?!.]*\s*$")
NOT_PEOPLE = frozenset(("ok", "okay", "so", "update", "urgent", "fyi", "psa", "note", "edit", "re", "also", "then",
                        "and", "both", "all", "or", "yes", "no", "pls", "please", "hey", "hi", "ping", "asap", "todo",
                        "status", "mem", "memory", "log", "logs", "gpu", "gpus", "progress", "eta", "help", "BUILD",
                        "HOST", "rigops", "bot", "ops", "prod", "cc", "q", "a"))
# Commands named as things, three or more in a row: "start, stop, logs, restart, rebuild are all in the new
# launcher", "the launcher has kill, rebuild and status subcommands now".
_COMMAND_WORD = (r"(?:start|stop|kill|abort|cancel|restart|rebuild|retry|rerun|relaunch|status|logs?|tail|mem|memory"
                 r"|gpus?|progress|eta|help|chart|graph|explain|hosts|builds|deploy|run|build|clean|watch)")
COMMAND_LIST_RE = re.compile(rf"\b{_COMMAND_WORD}(?:(?:, ?| and | or | & |/){_COMMAND_WORD}){{2,}}"
                             r"(?: (?:are|were|all|both|sub-?commands|commands|verbs|options|flags|buttons|actions"
                             r"|endpoints|targets|tabs|work|worked|do|now|too|as well)\b|[)\]])")
# "kill X or don't", "could kill X, could not": a choice left to whoever reads.
LEFT_OPEN_RE = re.compile(r"\bor (?:don't|do not|dont)\b|\bcould (?:kill|restart|rebuild)\b[^.?!]{0,30}\bcould not\b")
# Two actions offered as a choice, asked of the channel: "X — kill/rebuild at 8?", "kill or restart X?".
CHOICE_ASKED_RE = re.compile(r"\b(?:kill|stop|abort|cancel|nuke)(?: it| BUILD)? ?(?:/| or ) ?(?:rebuild|restart|retry"
                             r"|rerun|relaunch|wait|leave it|let it)\b[^?]*\?+\s*$")
# A rhetorical tag said as its own sentence: "kill X? in this economy?", "rebuild at 8?? who wrote that".
RHETORICAL_TAG_RE = re.compile(r"\bin this economy\b|(?:^|[.?!] ?)who (?:wrote|said|suggested|came up with"
                               r"|thought of|approved|decided) (?:that|this)\b"
                               r"|(?:^|[,.;:!?—–-] ?)(?:see if i care|i dare you|what could (?:possibly )?go wrong"
                               r"|said no one ever|famous last words)\W*$")
# A whole message said as a supposition: "hypothetically, kill X — what breaks?".
SUPPOSED_RE = re.compile(r"(?:hypothetically|theoretically|in theory|purely hypothetical|thought experiment"
                         r"|for the sake of argument|imagine|picture this|pretend|let's say|lets say|say we|suppose"
                         r"|supposing)\b")


def _opens_naming_people(text: str) -> bool:
    m = PEOPLE_OPENING_RE.match(text)
    return m is not None and not any(word in NOT_PEOPLE or IMPERATIVE_RE.fullmatch(word)
                                     for word in re.split(r", ?| and | & |/", m.group("who")))


def message_act(text: str, *, to_someone: bool = False, addressed: bool = False) -> Act | None:
    """The whole message is advice when it opens to an audience or quotes docs ("FYI for anyone …"), is said to
    somebody else when it opens by naming them (or says who it asks at its end), a poll when it ends by asking
    people to weigh in or to choose, and a statement when it talks of commands as things."""
    text = text.strip()
    if (to_someone and not addressed) or _opens_naming_people(text) or ASKING_SOMEONE_RE.search(text):
        return "to-someone"  # named in plain text, they are who is asked, in rigops' thread too
    if RHETORICAL_TAG_RE.search(text):
        return "rhetorical"
    if SUPPOSED_RE.match(text):
        return "hypothetical"
    if (POLL_RE.search(text) or CHOICE_ASKED_RE.search(text) or LEFT_OPEN_RE.search(text)
            or (not addressed and ASKED_OK_RE.search(text)) or VOTE_RE.match(text)):
        return "poll"
    if COMMAND_LIST_RE.search(text):
        return "statement"
    return "advice" if AUDIENCE_RE.search(text) or (not addressed and YOU_SHOULD_RE.search(text)) else None


# Who said what, before a colon: what follows is theirs, told ("somebody on the forum said: kill X, then …").
REPORTED_SPEECH_RE = re.compile(rf"\b{_SAID}$")
