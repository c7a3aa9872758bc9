"""Properties of the reading of orders as people write them (pbem.orders.reading through
pbem.orders.parsing.parse_text): an order wrapped in greetings, courtesy words and punctuation
reads the same as the order alone; a line with two different orders is never acted on;
a line of prose with digits in it is never an order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pbem.commands.registry import player_commands
from pbem.kinds import KINDS
from pbem.mail.text import BodyLine
from pbem.orders.parsing import DOUBTS, parse_text
from pbem.rules.dice import STAR
from pbem.rules.ladder import Bid

BLUFF = player_commands(KINDS["postal"])

# (how it is written, what it is): bids and challenges as sentences, bare bids, order words
BIDS_WRITTEN = {
    "en": ["I bid {q} {face}", "{q} {face}", "I'll raise to {q} {face}", "My bid is {q} {face}",
           "BID {q} {face}"],
    "de": ["Ich biete {q} {face}", "{q} {face}", "Ich erhöhe auf {q} {face}",
           "Ich setze auf {q} {face}", "Mein Gebot: {q} {face}", "BIETE {q} {face}"],
    "cs": ["Sázím {q} {face}", "{q} {face}", "Zvyšuji na {q} {face}", "Vsadím se o {q} {face}",
           "Nabízím {q} {face}", "SÁZKA {q} {face}"],
}
FACES_WRITTEN = {
    "en": {1: "ones", 2: "twos", 3: "threes", 4: "fours", 5: "fives", STAR: "stars"},
    "de": {1: "Einser", 2: "Zweier", 3: "Dreier", 4: "Vierer", 5: "Fünfer", STAR: "Sterne"},
    "cs": {1: "jedniček", 2: "dvojek", 3: "trojek", 4: "čtyřek", 5: "pětek",
           STAR: "hvězdiček"},
}
CHALLENGES_WRITTEN = {
    "en": ["Liar!", "I don't believe it", "Cups up!", "I challenge", "I call"],
    "de": ["Hoch die Becher!", "Becher hoch!", "Das glaube ich nicht", "Ich zweifle das an"],
    "cs": ["Nevěřím!", "Tomu nevěřím", "Přijímám sázku", "Ukažte kostky!"],
}
GREETINGS = {
    "en": ["Hi all,", "Hello,", "Thanks,", "So,", "Well,"],
    "de": ["Hallo zusammen,", "Hallo,", "Moin!", "Also,", "Danke,"],
    "cs": ["Ahoj,", "Zdravím,", "Dobrý den,", "Tak,", "Díky,"],
}
THANKS = {
    "en": [", thanks", ", please", ". Cheers", "! Good luck", ", thank you"],
    "de": [", danke", " bitte", ". Viele Grüße", "! Viel Glück", ", vielen Dank"],
    "cs": [", díky", " prosím", ". S pozdravem", "! Hodně štěstí", ", děkuji"],
}
languages = st.sampled_from(["en", "de", "cs"])
faces = st.sampled_from([1, 2, 3, 4, 5, STAR])


def read(text: str):  # type: ignore[no-untyped-def]
    return parse_text([BodyLine(1, text)], BLUFF)


@st.composite
def orders(draw: st.DrawFn, language: str) -> tuple[str, object]:
    """A bid (quantity 5 or more: the Czech form "pětek" fits it) or a challenge, as
    people write it in ``language``, and the order it is."""
    if draw(st.booleans()):
        return draw(st.sampled_from(CHALLENGES_WRITTEN[language])), "CHALLENGE"
    q, face = draw(st.integers(5, 30)), draw(faces)
    written = draw(st.sampled_from(BIDS_WRITTEN[language]))
    return written.format(q=q, face=FACES_WRITTEN[language][face]), Bid(q, face)


def order_of(text: str) -> object:
    parsed = read(text)
    assert parsed.problems == [], (text, parsed.problems)
    (order,) = parsed.orders
    return "CHALLENGE" if order.name == "CHALLENGE" else order.args


@given(languages, st.data(), st.booleans(), st.booleans(), st.sampled_from(["", "!", ".", "!!"]))
def test_an_order_wrapped_in_courtesy_reads_the_same(language: str, data: st.DataObject,
                                                     greet: bool, thank: bool,
                                                     end: str) -> None:
    written, order = data.draw(orders(language))
    assert order_of(written) == order
    wrapped = written.rstrip("!.") + end
    if greet:
        wrapped = f"{data.draw(st.sampled_from(GREETINGS[language]))} {wrapped}"
    if thank:
        wrapped = wrapped.rstrip("!.") + data.draw(st.sampled_from(THANKS[language]))
    assert order_of(wrapped) == order, wrapped


@given(languages, st.data(), st.sampled_from([" ", ". ", "! ", ", ", " oder ", " or ",
                                              " nebo "]))
def test_a_line_with_two_orders_is_never_acted_on(language: str, data: st.DataObject,
                                                  between: str) -> None:
    first, one = data.draw(orders(language))
    second, other = data.draw(orders(data.draw(languages)))
    if one == other:
        return
    parsed = read(f"{first.rstrip('!.')}{between}{second}")
    assert parsed.orders == [], (first, second)
    # cut into clauses, the line is answered with both readings offered
    assert len(parsed.problems) == 1 or between == " "


@given(languages, st.data())
def test_a_question_is_never_acted_on(language: str, data: st.DataObject) -> None:
    written, _order = data.draw(orders(language))
    parsed = read(written.rstrip("!.") + "?")
    assert parsed.orders == [] and [p.message for p in parsed.problems] == [DOUBTS["question"]]


@given(st.sampled_from(["see you in {n} days", "Meet at {n}:00", "We were {n} players",
                        "Bis in {n} Tagen", "Ich habe {n} Fünfer im Becher, ehrlich",
                        "Uvidíme se za {n} dny", "Mám {n} pětky v kelímku, fakt",
                        "Finn had {n} stars last game", "Treffen am {n}. Mai"]),
       st.integers(1, 99))
def test_prose_with_digits_is_never_an_order(text: str, n: int) -> None:
    parsed = read(text.format(n=n))
    assert parsed.orders == [] and parsed.problems == []
