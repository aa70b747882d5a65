"""Mandarin text as a person reads it aloud, for the Chinese voices (pure: text in, text out).

cn2an turns numbers into characters, but reads a phone number as one huge number and leaves "3:45"
alone, so the forms a reply uses are read here first: phone numbers and codes digit by digit (1 as
幺, as Chinese speakers say it in numbers), clock times (3:45 → 三点四十五分), years (2026年 →
二零二六年), ISO dates, percentages, temperatures, money, ranges, 两 before a measure word. Latin
words stay (the voice speaks them with English phonemes: `runs` cuts them out); capitals up to five
letters are spelled ("AI" → "A I", "OK" is "okay"). Punctuation that marks a pause stays as the voices' pause marks;
emoji, markdown and other symbols go.
"""

from __future__ import annotations

import re
import unicodedata

import cn2an

DIGITS = "零一二三四五六七八九"
PHONE_DIGITS = "零幺二三四五六七八九"  # 1 is 幺 in a number read digit by digit
PAUSES = "，。！？、；：…"
_HALF_TO_FULL = {",": "，", "!": "！", "?": "？", ";": "；", ":": "：", "。": "。"}
# measure words after which 2 is read 两 ("两个", "两点"), where "二" would sound wrong
_MEASURES = "个位只本次件张条种岁点分秒周天年台辆碗杯瓶块双对句首遍"
_HAN = r"\u3400-\u9fff"

_PHONE = re.compile(r"(?<![\d.])(?:\+?86[- ]?)?(1[3-9]\d)[- ]?(\d{4})[- ]?(\d{4})(?![\d])"  # mobile
                    r"|(?<![\d.])(0\d{2,3})-(\d{7,8})(?!\d)")  # landline with its area code
_CODE = re.compile(r"(?<![\d.])(?:0\d+|\d{7,})(?![\d.])")  # leading zero, or too long to be a quantity
_TIME = re.compile(r"(?<![\d.])([01]?\d|2[0-4])[:：]([0-5]\d)(?:[:：]([0-5]\d))?(?![\d])")
_ISO_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)")
_YEAR = re.compile(r"(?<!\d)(\d{2,4})(?=\s*年(?![龄级纪代]))")
_PERCENT = re.compile(r"(-?\d+(?:\.\d+)?)\s*[%％]")
_TEMPERATURE = re.compile(r"(-?\d+(?:\.\d+)?)\s*(?:°C|℃|度C)")
_MONEY = re.compile(r"([¥￥$€£])\s*(\d+(?:\.\d+)?)")
_CURRENCY = {"¥": "元", "￥": "元", "$": "美元", "€": "欧元", "£": "英镑"}
_RANGE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*[-~～–—]\s*(\d+(?:\.\d+)?)(?![\d.])")
_TWO = re.compile(rf"(?<![\d.])2(?=[{_MEASURES}])")
_NUMBER = re.compile(r"(?<![\d.])-?\d+(?:,\d{3})*(?:\.\d+)?")
_ACRONYM = re.compile(r"(?<![A-Za-z])[A-Z]{2,5}s?(?![A-Za-z])")
_WORDS = {"OK": "okay"}  # capitals said as a word, not spelled
_LATIN_RUN = re.compile(r"[A-Za-z][A-Za-z'’\- ]*[A-Za-z]|[A-Za-z]")


def digits(number: str, table: str = DIGITS) -> str:
    """A digit string read one digit at a time ("2026" → "二零二六")."""
    return "".join(table[int(d)] for d in number if d.isdigit())


def number(text: str) -> str:
    """An Arabic number read as a quantity ("1,234.5" → "一千二百三十四点五", "-3" → "负三")."""
    return cn2an.an2cn(text.replace(",", ""), "low")


def clock(hour: str, minute: str, second: str | None = None) -> str:
    """"3", "45" → "三点四十五分"; "3", "05" → "三点零五分"; "2", "00" → "两点"."""
    h = int(hour)
    said = ("两" if h == 2 else number(str(h))) + "点"
    if int(minute):
        said += ("零" if int(minute) < 10 else "") + number(str(int(minute))) + "分"
    if second is not None and int(second):
        said += number(str(int(second))) + "秒"
    return said


def _date(m: re.Match[str]) -> str:
    return f"{digits(m.group(1))}年{number(str(int(m.group(2))))}月{number(str(int(m.group(3))))}日"


def _phone(m: re.Match[str]) -> str:
    return "，".join(digits(g, PHONE_DIGITS) for g in m.groups() if g)


def _spell(m: re.Match[str]) -> str:
    word = m.group(0)
    if word in _WORDS:
        return _WORDS[word]
    plural = word.endswith("s") and not word[:-1].endswith("s")
    return " ".join(word[:-1] if plural else word)  # "GPUs" → "G P U": Chinese says no plural


def _symbol(ch: str) -> str:
    """What a character becomes: a pause mark, itself, a space (it separates words) or nothing."""
    if ch in _HALF_TO_FULL:
        return _HALF_TO_FULL[ch]
    if ch in PAUSES or ch.isalnum() or ch in "'’- ":
        return ch
    category = unicodedata.category(ch)
    if category.startswith("Z") or ch in "\n\t":
        return " "
    if ch in "—–~～":
        return "，"
    return ""  # emoji, brackets, quotes, markdown, other symbols


def normalise(text: str) -> str:
    """`text` with every number in characters, Latin kept, pause marks full-width, other symbols dropped."""
    text = unicodedata.normalize("NFKC", text).replace("……", "…").replace("...", "…")
    text = _PHONE.sub(_phone, text)
    text = _ISO_DATE.sub(_date, text)
    text = _TIME.sub(lambda m: clock(*m.groups()), text)
    text = _YEAR.sub(lambda m: digits(m.group(1)), text)
    text = _PERCENT.sub(lambda m: "百分之" + number(m.group(1)), text)
    text = _TEMPERATURE.sub(lambda m: number(m.group(1)) + "摄氏度", text)
    text = _MONEY.sub(lambda m: number(m.group(2)) + _CURRENCY[m.group(1)], text)
    text = _RANGE.sub(lambda m: number(m.group(1)) + "到" + number(m.group(2)), text)
    text = _CODE.sub(lambda m: digits(m.group(0)), text)
    text = _TWO.sub("两", text)
    text = _NUMBER.sub(lambda m: number(m.group(0)), text)
    text = _ACRONYM.sub(_spell, text)
    text = "".join(_symbol(ch) for ch in text)
    text = re.sub(rf"\s*([{PAUSES}])\s*", r"\1", text)  # no space around a pause mark
    text = re.sub(rf"([{PAUSES}])[{PAUSES}]+", r"\1", text)  # one pause mark in a row
    text = re.sub(rf"(?<=[{_HAN}])\s+|\s+(?=[{_HAN}])", "", text)  # spaces only between Latin words
    return re.sub(r"\s+", " ", text).strip().lstrip(PAUSES)


def runs(text: str) -> list[tuple[str, str]]:
    """Normalised text cut into ("zh", …) and ("en", …) runs, in order: Latin words are spoken with
    English phonemes, the rest as Mandarin. Pause marks stay with the run before them."""
    out: list[tuple[str, str]] = []
    at = 0
    for m in _LATIN_RUN.finditer(text):
        if m.start() > at:
            out.append(("zh", text[at:m.start()]))
        out.append(("en", m.group(0)))
        at = m.end()
    if at < len(text):
        out.append(("zh", text[at:]))
    merged: list[tuple[str, str]] = []
    for lang, part in out:  # the pause marks a run starts with end the run before it
        body = part.lstrip(PAUSES + " ")
        if merged:
            merged[-1] = (merged[-1][0], merged[-1][1] + part[:len(part) - len(body)])
        if body:
            merged.append((lang, body))
    return [(lang, part.strip()) for lang, part in merged if part.strip(PAUSES + " ")]
