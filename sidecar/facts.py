"""Facts about the user, taken from what they said by rules: who and what of theirs, what about it, what.

"My sister Lena lives in Lisbon" gives two facts, (sister, name, Lena) and (sister, lives_in, Lisbon);
"I moved to Porto" gives (user, lives_in, Porto), which replaces where the user lived before: a fact
whose relation holds one value at a time (`SINGLE`) is keyed by subject and relation, the others
(likes, pets, languages) by their value too (`Fact.key`). Chinese is read the same way
("我妹妹住在上海", "我喜欢爬山").

Rules, not the model: they run in microseconds after each exchange, never put words in the user's
mouth, and skip what is asked, denied or supposed ("Do you live in Lisbon?", "I don't like tea", "If I
lived in Rome"). What they miss is simply not remembered (tests/bench/memory_recall.py measures it).
Each fact carries the sentence it tells her (`said`, in the user's language) and the words a later
question about it would use (`keywords`), which the store's full-text index searches.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

# Relations that hold one value at a time: a new one replaces the old.
SINGLE = {"name", "lives_in", "from", "job", "works_at", "age", "birthday", "studies", "favourite"}

# The words a question about each relation is likely to use, English and Chinese (the index searches them).
_KEYWORDS = {
    "name": "name names called named who 名字 叫什么 叫 谁",
    "lives_in": "live lives living where city town country home moved 住 住在 哪里 哪儿 城市 搬",
    "from": "from where come comes born hometown originally 来自 哪里 哪儿 老家 哪里人",
    "job": "job work works working profession career living 工作 职业 做什么 干什么",
    "works_at": "work works working company job employer where 工作 公司 上班 哪里",
    "age": "old age years 岁 多大 年龄 几岁",
    "birthday": "birthday born when date 生日 几月",
    "studies": "study studies studying student school university 学 学习 读 专业",
    "likes": "like likes love loves enjoy enjoys fan favourite favorite hobby 喜欢 爱 爱好",
    "dislikes": "hate hates dislike dislikes like stand 讨厌 不喜欢",
    "favourite": "favourite favorite best like 最喜欢",
    "has": "have has own pet pets 有 养",
    "speaks": "speak speaks language languages 说 会说 语言",
    "plays": "play plays instrument sport 弹 玩 打 踢",
    "allergic_to": "allergic allergy allergies eat 过敏",
}

_KIN_EN = ("best friend", "sister", "brother", "mom", "mum", "mother", "dad", "father", "wife", "husband", "partner",
           "boyfriend", "girlfriend", "son", "daughter", "friend", "boss", "grandmother", "grandma", "grandfather",
           "grandpa", "aunt", "uncle", "cousin", "roommate", "neighbour", "neighbor", "dog", "cat", "puppy",
           "kitten", "hamster", "parrot", "rabbit", "fish", "horse", "turtle", "colleague", "baby", "kid")
_KIN_ZH = ("妹妹", "姐姐", "哥哥", "弟弟", "妈妈", "母亲", "爸爸", "父亲", "老婆", "老公", "妻子", "丈夫", "儿子",
           "女儿", "男朋友", "女朋友", "朋友", "老板", "奶奶", "爷爷", "外婆", "姥姥", "外公", "同事", "室友", "邻居",
           "狗", "猫", "小狗", "小猫", "兔子", "仓鼠", "鹦鹉")
_JOBS = ("nurse", "teacher", "doctor", "engineer", "programmer", "developer", "designer", "student", "lawyer",
         "chef", "cook", "pilot", "writer", "artist", "musician", "accountant", "farmer", "driver", "scientist",
         "architect", "dentist", "pharmacist", "photographer", "journalist", "librarian", "mechanic", "carpenter",
         "electrician", "plumber", "baker", "waiter", "waitress", "firefighter", "police officer", "vet",
         "veterinarian", "translator", "researcher", "professor", "manager", "consultant", "cashier", "barista")

# "I'm a <words> <job>": the last word a job's (`_JOBS`) or shaped like one (a data analyst, a software
# developer, a graphic designer), but not the nouns of that shape that are no job ("a dog lover", "a big fan").
_JOB_SHAPE = r"[a-z]+(?:er|or|ist|yst|ian|eer|ant|ent|ect|ic|man|woman)"
_NOT_JOBS = {"lover", "fan", "member", "user", "owner", "beginner", "believer", "person", "number", "mother",
             "father", "sister", "brother", "daughter", "partner", "other", "winner", "loser", "eater", "sleeper",
             "talker", "speaker", "learner", "parent", "patient", "resident", "client", "vegetarian", "christian",
             "mess", "fighter", "drinker", "smoker", "runner", "reader", "gamer", "player", "dreamer", "worrier",
             "introvert", "extrovert", "newcomer", "foreigner", "stranger", "survivor", "twin", "giant", "fanatic",
             # words that make it a judgement, not a job: "a very good cook", "a bit of a worrier"
             "very", "really", "pretty", "quite", "good", "bad", "great", "big", "huge", "terrible", "little", "bit",
             "total", "real", "complete", "of"}
_A_JOB = re.compile(rf"(?:[a-z][\w-]*\s+)*(?:{'|'.join(_JOBS)}|{_JOB_SHAPE})", re.I)
_WORD = r"[A-Za-z][\w'-]*"
_NAME = r"[A-Z][a-z'-]{1,20}"
_PLACE = r"[A-Z][\w'-]*(?:\s+(?:de\s+|of\s+)?[A-Z][\w'-]*){0,3}"
_KIN = "|".join(sorted(_KIN_EN, key=len, reverse=True))
# "I" or "my sister" / "my sister Lena" / "my dog, Max,"
_WHO = (rf"(?:(?P<me>I|[Mm]y(?=\s+(?:favou?rite|job|birthday)\b))"
        rf"|[Mm]y\s+(?P<kin>{_KIN})(?:,?\s+(?P<kin_name>{_NAME}),?)?)")
_END = (r"(?=\s*(?:[,.;!?]|\band\b|\bbut\b|\bbecause\b|\bnow\b|\btoo\b|\bnowadays\b|\bthese days\b|\blast\b|"
        r"\bthis\b|\bin \d|\ba few\b|\brecently\b|\bsince\b|\bwith\b|\bago\b|\byesterday\b|$))")
_THING = r"(?P<value>[^,.;!?]{2,40}?)"
_DENIED = re.compile(r"\b(?:not|never|don't|dont|doesn't|didn't|no longer|won't|wouldn't|used to|if|wish|"
                     r"maybe|might|would|could|should)\b|n't\b", re.I)
_ASKED = re.compile(r"^\s*(?:do|does|did|is|are|am|can|could|would|will|what|where|who|when|how|which|why)\b", re.I)

_EN_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("lives_in", re.compile(rf"{_WHO}\s+(?:still\s+|now\s+|currently\s+)?(?:live|lives|am living|is living)\s+"
                            rf"in\s+(?P<value>{_PLACE}){_END}")),
    ("lives_in", re.compile(rf"{_WHO}\s+(?:just\s+|recently\s+|have\s+|has\s+)?(?:moved|relocated)\s+"
                            rf"(?:to|back to)\s+(?P<value>{_PLACE}){_END}")),
    ("from", re.compile(rf"{_WHO}\s+(?:am|is|'m|come|comes|was born|were born)\s+(?:originally\s+)?"
                        rf"(?:from|in)\s+(?P<value>{_PLACE}){_END}")),
    ("job", re.compile(rf"{_WHO}\s+(?:work|works|am working|is working)\s+as\s+(?:a|an)\s+{_THING}{_END}")),
    ("job", re.compile(rf"{_WHO}\s*(?:'s|'m|am|is)\s+(?:now\s+)?(?:a|an)\s+(?P<value>(?:[a-z][\w-]*\s+){{0,3}}?"
                       rf"(?:{'|'.join(_JOBS)}|{_JOB_SHAPE}))(?=\s+(?:at|in|for|with|from)\b|{_END[3:]}")),
    ("job", re.compile(rf"{_WHO}(?:'s)?\s+job\s+is\s+(?:being\s+)?(?:a\s+|an\s+)?{_THING}{_END}")),
    ("works_at", re.compile(rf"{_WHO}\s+(?:work|works|am working|is working)\s+(?:at|for)\s+"
                            rf"(?:a\s+|an\s+|the\s+)?{_THING}{_END}")),
    ("studies", re.compile(rf"{_WHO}\s+(?:study|studies|am studying|is studying|major in|majors in)\s+{_THING}"
                           rf"{_END}")),
    ("age", re.compile(rf"{_WHO}\s*(?:'m|am|is|'s|turned|just turned)\s+(?P<value>\d{{1,3}})"
                       rf"(?:\s+years?\s+old)?{_END}")),
    ("birthday", re.compile(rf"{_WHO}(?:'s)?\s+birthday\s+is\s+(?:on\s+)?{_THING}{_END}")),
    ("favourite", re.compile(rf"{_WHO}(?:'s)?\s+(?:favourite|favorite)\s+(?P<what>{_WORD}(?:\s+{_WORD})?)\s+"
                             rf"is\s+(?:a\s+|an\s+|the\s+)?{_THING}{_END}")),
    ("speaks", re.compile(rf"{_WHO}\s+(?:speak|speaks|can speak)\s+(?P<value>[A-Z][a-z]+(?:\s+and\s+[A-Z][a-z]+)?)")),
    ("plays", re.compile(rf"{_WHO}\s+(?:play|plays)\s+(?:the\s+)?{_THING}{_END}")),
    ("allergic_to", re.compile(rf"{_WHO}\s*(?:'m|am|is|'s)\s+allergic\s+to\s+{_THING}{_END}")),
    ("dislikes", re.compile(rf"{_WHO}\s+(?:hate|hates|can't stand|cannot stand|dislike|dislikes)\s+{_THING}"
                            rf"{_END}")),
    ("likes", re.compile(rf"{_WHO}\s*(?:'m|am|is)\s+(?:a\s+)?(?:big\s+|huge\s+|great\s+)?fan\s+of\s+{_THING}"
                         rf"{_END}")),
    ("likes", re.compile(rf"{_WHO}\s+(?:really\s+|absolutely\s+|just\s+)?(?:like|likes|love|loves|enjoy|enjoys|"
                         rf"adore|adores)\s+{_THING}{_END}")),
)
# "I have a dog called Max", "my cat is called Miso", "my sister's name is Lena", "my brother is Tom"
_HAS_NAMED = re.compile(rf"\bI\s+(?:have|'ve got|have got|got)\s+(?:a|an)\s+(?:\w+\s+)?(?P<kin>{_KIN})\s+"
                        rf"(?:called|named|whose name is)\s+(?P<value>{_NAME})")
_HAS = re.compile(rf"\bI\s+(?:have|'ve got|have got)\s+(?:a|an|two|three)\s+(?P<value>{_KIN}s?)\b")
_KIN_NAMED = re.compile(rf"\b[Mm]y\s+(?P<kin>{_KIN})(?:'s\s+name\s+is|\s+is\s+called|\s+is\s+named|\s+is)\s+"
                        rf"(?P<value>{_NAME})\b")
_MY_NAME = re.compile(rf"\b(?:[Mm]y name is|[Mm]y name's|[Cc]all me)\s+(?P<value>{_NAME})\b")

_KIN_ZH_RE = "|".join(sorted(_KIN_ZH, key=len, reverse=True))
_ZH_WHO = (rf"我(?:的)?(?:(?P<kin>{_KIN_ZH_RE})"
           rf"(?:叫(?P<kin_name>[\u4e00-\u9fff]{{1,3}}?)(?=[，,]?(?:住|在|是|喜欢|今年)))?[，,]?)?")
_ZH_JOB = r"(?:师|员|生|家|工|手|长|官|护士|会计|司机|老板|警察|农民|记者|演员|职员)"
_ZH_END = r"(?=[，。！？,.!?；;\s]|了|$)"
_ZH_VALUE = r"(?P<value>[^，。！？,.!?；;\s了]{1,12}?)"
_ZH_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("lives_in", re.compile(rf"{_ZH_WHO}(?:现在|目前)?(?:住在|生活在|搬到了|搬到|搬去了|搬去){_ZH_VALUE}{_ZH_END}")),
    ("from", re.compile(rf"{_ZH_WHO}(?:来自|是从){_ZH_VALUE}(?:来的)?{_ZH_END}")),
    ("from", re.compile(rf"{_ZH_WHO}的?老家(?:是|在){_ZH_VALUE}{_ZH_END}")),
    ("job", re.compile(rf"{_ZH_WHO}(?:现在|目前)?(?:的工作是|是一名|是一个|是个|当|做){_ZH_VALUE}(?:工作)?{_ZH_END}")),
    # 我爸爸是厨师, 我是护士: a plain 是 only before a word shaped like a job (not 我是中国人)
    ("job", re.compile(rf"{_ZH_WHO}(?:现在|目前)?是(?P<value>[\u4e00-\u9fff]{{0,4}}?{_ZH_JOB}){_ZH_END}")),
    # 我在一家银行当会计: the job, and where
    ("job", re.compile(rf"{_ZH_WHO}(?:现在|目前)?在(?P<place>[^，。！？,.!?在]{{2,12}}?)(?:当|做)"
                       rf"{_ZH_VALUE}{_ZH_END}")),
    ("works_at", re.compile(rf"{_ZH_WHO}在(?P<value>[^，。！？,.!?在]{{2,12}}?)(?:工作|上班){_ZH_END}")),
    ("age", re.compile(rf"{_ZH_WHO}(?:今年)?(?P<value>[0-9一二三四五六七八九十两]{{1,4}})岁")),
    ("birthday", re.compile(rf"{_ZH_WHO}的?生日是{_ZH_VALUE}{_ZH_END}")),
    ("favourite", re.compile(rf"{_ZH_WHO}最喜欢的(?P<what>[\u4e00-\u9fff]{{1,4}}?)是{_ZH_VALUE}{_ZH_END}")),
    ("speaks", re.compile(rf"{_ZH_WHO}会说{_ZH_VALUE}{_ZH_END}")),
    ("allergic_to", re.compile(rf"{_ZH_WHO}对{_ZH_VALUE}过敏")),
    ("dislikes", re.compile(rf"{_ZH_WHO}(?:很|特别|最)?(?:讨厌|不喜欢){_ZH_VALUE}{_ZH_END}")),
    ("likes", re.compile(rf"{_ZH_WHO}(?:很|特别|非常|最|也|真的)?(?:喜欢|爱){_ZH_VALUE}{_ZH_END}")),
    ("studies", re.compile(rf"{_ZH_WHO}(?:在)?(?:学|读|学习){_ZH_VALUE}(?:专业)?{_ZH_END}")),
)
_ZH_HAS_NAMED = re.compile(rf"我(?:有|养了|养)(?:一|两)?(?:只|条|个|匹)?(?P<kin>{_KIN_ZH_RE})[，,]?"
                           r"(?:它|他|她)?叫(?P<value>[\u4e00-\u9fffA-Za-z]{1,6}?)(?=[，。！？,.!?\s]|$)")
_ZH_KIN_NAMED = re.compile(rf"我(?:的)?(?P<kin>{_KIN_ZH_RE})(?:的名字)?叫(?P<value>[\u4e00-\u9fffA-Za-z]{{1,6}}?)"
                           r"(?=[，。！？,.!?\s]|$)")
_ZH_MY_NAME = re.compile(r"我叫(?P<value>[\u4e00-\u9fff]{1,4}?)(?=[，。！？,.!?\s]|$)"
                         r"|我的名字(?:是|叫)(?P<v2>[\u4e00-\u9fff]{1,4}?)(?=[，。！？,.!?\s]|$)")
_ZH_WORKPLACE = re.compile(r"^(?:一名|一个|个)")
_ZH_MEASURE = re.compile(r"^(?:一家|一个|一所|这家|那家)")
_ZH_ASKED = re.compile(r"[吗呢？?]|哪|什么|谁|几|多少|怎么|是不是|有没有")
_ZH_DENIED = re.compile(r"不是|没有|没|不住|不在|如果|要是|以前|曾经|可能|也许")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_TRAILING = re.compile(r"\s+(?:a lot|very much|so much|a bit|really|too|as well|anymore|now|here|there|at all)$",
                       re.I)


@dataclass(frozen=True)
class Fact:
    """One thing about the user: `subject` is "user" or who/what of theirs ("sister", "dog", "妹妹")."""

    subject: str
    relation: str  # one of _KEYWORDS' keys; "favourite" carries what it is a favourite of in `detail`
    value: str
    detail: str = ""  # "colour" in "my favourite colour is green"
    # The value this one replaced (the store sets it): said with it, the new value wins over the old words
    # still in the transcript ("The user now lives in Hangzhou (no longer Chengdu)") — a small model told
    # only the new value answered with the old one the history repeated.
    previous: str = ""

    @property
    def key(self) -> str:
        """Facts with the same key are the same fact: the newer one replaces the older."""
        base = f"{self.subject}|{self.relation}|{self.detail.lower()}"
        return base if self.relation in SINGLE else f"{base}|{self.value.lower()}"

    @property
    def chinese(self) -> bool:
        return bool(_CJK.search(self.subject + self.value + self.detail))

    @property
    def said(self) -> str:
        """The fact as one sentence she is told (in the language it was said in)."""
        return _said_zh(self) if self.chinese else _said_en(self)

    def replacing(self, old: str) -> Fact:
        """This fact, said as replacing the value `old` (when it is another value of a one-value relation)."""
        if self.relation not in SINGLE or _squashed(old) == _squashed(self.value):
            return self
        return dataclasses.replace(self, previous=old)

    @property
    def keywords(self) -> str:
        """Words a question about this fact would use, for the full-text index."""
        return " ".join(filter(None, (self.subject if self.subject != "user" else "I me my 我", self.detail,
                                      self.value, _KEYWORDS[self.relation])))


def _squashed(value: str) -> str:
    return re.sub(r"\s+", "", value).lower()


def _said_en(f: Fact) -> str:
    who = "The user" if f.subject == "user" else f"The user's {f.subject}"
    verbs = {"name": "is called {v}", "lives_in": "lives in {v}", "from": "is from {v}", "job": "works as {a} {v}",
             "works_at": "works at {v}", "age": "is {v} years old", "birthday": "has a birthday on {v}",
             "studies": "studies {v}", "likes": "likes {v}", "dislikes": "dislikes {v}", "has": "has {a} {v}",
             "speaks": "speaks {v}", "plays": "plays {v}", "allergic_to": "is allergic to {v}",
             "favourite": "'s favourite {d} is {v}"}
    verb = verbs[f.relation].format(v=f.value, d=f.detail, a="an" if f.value[:1].lower() in "aeiou" else "a")
    if f.relation == "has" and f.value.endswith("s"):
        verb = f"has {f.value}"
    if f.relation == "job" and not _A_JOB.fullmatch(f.value):  # "my job is teaching kids"
        verb = f"'s job is {f.value}"
    if f.previous:  # "The user now lives in Porto (no longer Lisbon)."
        said = f"{who}{verb} now" if verb.startswith("'") else f"{who} now {verb}"
        return f"{said} (no longer {f.previous})."
    return f"{who}{verb}." if verb.startswith("'") else f"{who} {verb}."


def _said_zh(f: Fact) -> str:
    who = "用户" if f.subject == "user" else f"用户的{f.subject}"
    verbs = {"name": "叫{v}", "lives_in": "住在{v}", "from": "来自{v}", "job": "的工作是{v}", "works_at": "在{v}工作",
             "age": "{v}岁", "birthday": "的生日是{v}", "studies": "学{v}", "likes": "喜欢{v}", "dislikes": "不喜欢{v}",
             "has": "有{v}", "speaks": "会说{v}", "plays": "玩{v}", "allergic_to": "对{v}过敏",
             "favourite": "最喜欢的{d}是{v}"}
    verb = verbs[f.relation].format(v=f.value, d=f.detail)
    if f.previous:  # 用户现在住在杭州（以前是成都）。
        return f"{who}现在{verb}（以前是{f.previous}）。"
    return f"{who}{verb}。"


def facts_in(text: str) -> list[Fact]:
    """The facts about the user in what they said (empty for a question, a denial or a supposition)."""
    found: dict[str, Fact] = {}
    for sentence in _sentences(text):
        for fact in (_zh(sentence) if _CJK.search(sentence) else _en(sentence)):
            found[fact.key] = fact
    return list(found.values())


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?。！？])\s*|[;；]", text) if s.strip()]


def _en(sentence: str) -> list[Fact]:
    if sentence.rstrip().endswith("?") or _ASKED.match(sentence):
        return []
    facts: list[Fact] = []
    for clause in re.split(r",\s*(?:and|but)\s+|\s+(?:and|but)\s+(?=I\b|[Mm]y\b)", sentence):
        if _DENIED.search(clause):
            continue
        facts += _en_clause(clause)
    return facts


def _en_clause(clause: str) -> list[Fact]:
    facts: list[Fact] = []
    if m := _MY_NAME.search(clause):
        facts.append(Fact("user", "name", m["value"]))
    if m := _HAS_NAMED.search(clause):
        kin = _kin(m["kin"])
        facts += [Fact("user", "has", f"{kin}"), Fact(kin, "name", m["value"])]
    elif m := _HAS.search(clause):
        facts.append(Fact("user", "has", m["value"].lower()))
    if m := _KIN_NAMED.search(clause):
        facts.append(Fact(_kin(m["kin"]), "name", m["value"]))
    for relation, pattern in _EN_RULES:
        for m in pattern.finditer(clause):
            value = _TRAILING.sub("", m["value"].strip()).strip()
            if relation == "job":  # "a nurse at the city hospital": the job, not where
                value = re.split(r"\s+(?:at|in|for|with|from)\s+", value)[0]
                if set(value.lower().split()) & _NOT_JOBS:
                    continue
            if not value or value.lower() in ("it", "that", "this", "you", "him", "her", "them", "to"):
                continue
            subject = "user" if m["me"] else _kin(m["kin"])
            if m["kin_name"]:
                facts.append(Fact(subject, "name", m["kin_name"]))
            detail = m["what"].lower() if "what" in pattern.groupindex else ""
            facts.append(Fact(subject, relation, value, detail))
    return facts


def _zh(sentence: str) -> list[Fact]:
    if _ZH_ASKED.search(sentence):
        return []
    facts: list[Fact] = []
    for clause in re.split(r"[，,]\s*(?=我)|而且|但是", sentence):
        if _ZH_DENIED.search(clause):
            continue
        if m := _ZH_MY_NAME.search(clause):
            facts.append(Fact("user", "name", m["value"] or m["v2"]))
        if m := _ZH_HAS_NAMED.search(clause):
            facts += [Fact("user", "has", m["kin"]), Fact(m["kin"], "name", m["value"])]
        elif m := _ZH_KIN_NAMED.search(clause):
            facts.append(Fact(m["kin"], "name", m["value"]))
        for relation, pattern in _ZH_RULES:
            m = pattern.search(clause)
            if m is None or not m["value"]:
                continue
            subject = m["kin"] or "user"
            if m["kin_name"]:
                facts.append(Fact(subject, "name", m["kin_name"]))
            detail = m["what"] if "what" in pattern.groupindex else ""
            value = _ZH_WORKPLACE.sub("", m["value"]) if relation == "job" else m["value"]
            facts.append(Fact(subject, relation, value, detail))
            if "place" in pattern.groupindex:
                facts.append(Fact(subject, "works_at", _ZH_MEASURE.sub("", m["place"])))
            break  # one predicate per Chinese clause: 喜欢 inside 最喜欢的 is not a second fact
    return facts


def _kin(word: str) -> str:
    return {"mum": "mom", "mother": "mom", "father": "dad", "grandma": "grandmother", "grandpa": "grandfather",
            "neighbor": "neighbour", "puppy": "dog", "kitten": "cat"}.get(word.lower(), word.lower())
