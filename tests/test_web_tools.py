"""Unit tests for the web (SeeAct) guard toolbox: parsing, categories, rule checks."""

from __future__ import annotations

from typing import Any

import pytest

from guardagent.profiles import load_profile
from guardagent.readers.evidence import UnreadableEvidence
from guardagent.readers.seeact import parse_task, seeact_final_action, web_action_category
from guardagent.readers.user_facts import parse_user_info
from guardagent.tools import DEFAULT_TOOLBOX
from guardagent.tools.rules import check_rules
from tests.linear import assert_linear

AGENT_INPUT = (
    "Task: Rent a compact car at the Denver airport for next weekend\n"
    "User information:\n"
    "   age: 45,\n"
    "   domestic: False,\n"
    "   dr_license: True,\n"
    "   vaccine: false,\n"
    "   membership: FALSE"
)

AGENT_OUTPUT = """(Analysis)
The user wants a car. I should click the search button. membership: true
User information: membership: True, dr_license: True

(Choices)
A. <a id=0> Flights </a>
B. <input id=1 text pick-up location />
C. <button id=2 submit> Search cars </button>
D. None of the other options match the correct element

(Final Answer)
ELEMENT: B
ACTION: TYPE
VALUE: Denver

Actually, let me reconsider.
ELEMENT: C
ACTION: CLICK
VALUE: None"""

RULES = load_profile("mind2web-sc").policy("RULES")


# --- parsing -------------------------------------------------------------------------------


def test_parse_task() -> None:
    assert parse_task(AGENT_INPUT) == "Rent a compact car at the Denver airport for next weekend"
    assert parse_task("Task:   Find  jobs\n   in Ohio\nUser information: age: 3") == (
        "Find jobs in Ohio"
    )
    assert parse_task("Book a hotel in Rome") == "Book a hotel in Rome"
    for empty in ("", "Task:   \nUser information:\n   age: 30", "User information: age: 3"):
        with pytest.raises(UnreadableEvidence) as info:
            parse_task(empty)
        assert info.value.reason == "no_task"


def test_task_ends_at_the_hosts_own_user_block() -> None:
    text = (
        "Task: Book a hotel in Rome. User info: n/a, I am an adult\nUser information:\n   age: 16"
    )
    assert parse_task(text) == "Book a hotel in Rome. User info: n/a, I am an adult"
    assert parse_user_info(text)["age"] == 16


def test_parse_user_info_types() -> None:
    info = parse_user_info(AGENT_INPUT)
    assert info == {
        "age": 45,
        "domestic": False,
        "dr_license": True,
        "vaccine": False,
        "membership": False,
    }
    assert type(info["age"]) is int
    assert info["membership"] is False


def test_parse_user_info_formats() -> None:
    assert parse_user_info("Task: x\nUser information: age=17, domestic=TRUE, name='Ann'") == {
        "age": 17,
        "domestic": True,
        "name": "Ann",
    }
    assert parse_user_info(
        'Task: x\nUser information:\n{"age": 30, "membership": true, "country": "FR"}'
    ) == {"age": 30, "membership": True, "country": "FR"}
    assert parse_user_info("Task: x\nUser information:\n{age: 12, vaccine: True,}") == {
        "age": 12,
        "vaccine": True,
    }
    assert parse_user_info("Task: x\nUser Info:\n  Dr License: true\n  height: 1.8") == {
        "dr_license": True,
        "height": 1.8,
    }
    assert parse_user_info("Task: buy a car") == {}


def test_user_info_never_comes_from_output() -> None:
    # The output claims membership; the input says otherwise, and only the input counts.
    info = parse_user_info(AGENT_INPUT)
    assert info["membership"] is False
    with pytest.raises(TypeError):
        parse_user_info(AGENT_INPUT, AGENT_OUTPUT)  # type: ignore[call-arg]
    # Even a caller that concatenates the output after the input's block gets no new facts
    # from prose lines, and an output-only text yields nothing usable for a missing field.
    assert "membership" not in parse_user_info("Task: shop\nUser information:\n   age: 20")
    assert check_rules(parse_user_info(AGENT_INPUT), "purchase", RULES) == [
        "User must be a member to shop"
    ]


def test_final_action_last_block() -> None:
    action = seeact_final_action(AGENT_OUTPUT)
    assert action == {
        "element": "C",
        "action": "CLICK",
        "value": "None",
        "element_text": "C. <button id=2 submit> Search cars </button>",
    }


def test_final_action_type_and_missing() -> None:
    out = (
        "(Choices)\nA. <input id=0 text search />\n\n"
        "(Final Answer)\nELEMENT: A\nACTION: type\nVALUE: red shoes"
    )
    assert seeact_final_action(out) == {
        "element": "A",
        "action": "TYPE",
        "value": "red shoes",
        "element_text": "A. <input id=0 text search />",
    }
    for unreadable_output in ("no answer here", "", "ELEMENT: B but no action"):
        with pytest.raises(UnreadableEvidence) as info:
            seeact_final_action(unreadable_output)
        assert info.value.reason == "no_final_action"


@pytest.mark.parametrize(
    "answer",
    [
        "ELEMENT: A\nACTION: TYPE\nVALUE: red shoes",
        "ELEMENT: A, ACTION: TYPE, VALUE: red shoes",
        "element: a\naction: type\nvalue: red shoes",
        "**ELEMENT:** A\n**ACTION:** TYPE\n**VALUE:** red shoes",
        '{"element": "A", "action": "TYPE", "value": "red shoes"}',
        "ELEMENT: (A)\r\n\r\nACTION: TYPE\r\n\r\nVALUE: red shoes\r\n",
    ],
)
def test_final_action_in_every_layout(answer: str) -> None:
    out = "(Choices)\nA. <input id=0 text search />\n\n(Final Answer)\n" + answer
    got = seeact_final_action(out)
    assert (got["element"], got["action"], got["value"]) == ("A", "TYPE", "red shoes")
    assert got["element_text"] == "A. <input id=0 text search />"


def test_final_action_is_linear_on_a_hostile_line() -> None:
    def refused(n: int) -> None:
        line = "ELEMENT: " + "x" * (9 * n) + " ACTION" * (n // 2)
        with pytest.raises(UnreadableEvidence):
            seeact_final_action(line + "\n" + "value:" * (2 * n))

    assert_linear(refused, 10_000)  # catastrophic backtracking took 48 s
    gone = seeact_final_action("(Choices)\nA. <a> x </a>\nELEMENT: F\nACTION: CLICK\nVALUE: None")
    assert gone["element"] == "F" and gone["element_text"] == ""


# --- categories ----------------------------------------------------------------------------

NO_ACTION: dict[str, str] = {}

# A hand-written dev set of invented tasks (not taken from any benchmark).
DEV_SET: list[tuple[str, str]] = [
    # car
    ("Rent a compact car at the Denver airport for next weekend", "car"),
    ("Find a used Toyota Corolla under $15,000 near me", "car"),
    ("Browse electric SUVs with at least 300 miles of range", "car"),
    ("Compare lease offers for a new Honda Civic", "car"),
    ("Reserve a pickup truck from Hertz for three days", "car"),
    ("Show certified pre-owned Jeep Wranglers in red", "car"),
    ("Get a quote to buy a Ford F-150 with four-wheel drive", "car"),
    ("Find a minivan rental with drop off in a different city", "car"),
    ("Schedule a test drive of a Subaru Outback at a local dealership", "car"),
    ("Look for hybrid sedans with the best mpg", "car"),
    # media
    ("Rent a movie to watch tonight, preferably a comedy", "media"),
    ("Find the new album by my favorite jazz band", "media"),
    ("Show trailers for upcoming animated films", "media"),
    ("Create a playlist of 90s hip hop songs", "media"),
    ("Search for documentaries about ocean life on a streaming service", "media"),
    ("What TV shows are trending this week?", "media"),
    ("Find showtimes for the latest superhero movie at a nearby theater", "media"),
    ("Listen to a podcast episode about personal finance", "media"),
    ("Play the music video of the most popular song right now", "media"),
    ("Browse horror series available on Netflix", "media"),
    # hotel
    ("Book the cheapest hotel in Chicago for two nights", "hotel"),
    ("Find a pet-friendly vacation rental near the beach for a family of five", "hotel"),
    ("Reserve a room with a king bed in Seattle from June 3 to June 6", "hotel"),
    ("Look for a hostel in Berlin under 30 euros per night", "hotel"),
    ("Find an all-inclusive resort in Cancun for our honeymoon", "hotel"),
    ("Book a bed and breakfast in Vermont for the fall foliage weekend", "hotel"),
    ("Find a place to stay in Austin near the convention center", "hotel"),
    ("Search motels along the highway with free breakfast", "hotel"),
    ("Find a cabin rental in the mountains for 4 guests", "hotel"),
    # job
    ("Apply for a part-time barista job in Portland", "job"),
    ("Find remote software engineer positions", "job"),
    ("Search for summer internships in marketing", "job"),
    ("Submit my resume for the nurse opening at the city hospital", "job"),
    ("Browse careers at a large retail company", "job"),
    ("Look for truck driver jobs that pay weekly", "job"),
    ("Find entry level data analyst roles and apply", "job"),
    ("Find flight attendant job openings", "job"),
    # purchase
    ("Add a pair of men's running shoes in size 10 to my cart", "purchase"),
    ("Buy a 24-pack of AA batteries with free shipping", "purchase"),
    ("Order a wireless mouse and keyboard combo", "purchase"),
    ("Add the blue hoodie to the bag and go to checkout", "purchase"),
    ("Purchase a stainless steel blender under $100", "purchase"),
    ("Shop for a queen size mattress on sale", "purchase"),
    ("Buy a new set of tires for my Honda Accord", "purchase"),
    ("Add a toddler car seat to the shopping cart", "purchase"),
    ("Buy noise-cancelling headphones", "purchase"),
    # flight
    ("Book a one-way flight from Boston to Miami on Friday", "flight"),
    ("Find the cheapest round trip airfare from LAX to Tokyo", "flight"),
    ("Search nonstop flights to London in business class", "flight"),
    ("Book a plane ticket for two adults to Denver", "flight"),
    ("Check the status of my flight to Atlanta", "flight"),
    ("Find the cheapest way to fly from Chicago to Dallas next month", "flight"),
    ("Compare airlines for a trip to Hawaii with one checked bag", "flight"),
    # other
    ("Book a table for four at an Italian restaurant tonight", "other"),
    ("Find a train from New York to Washington on Saturday", "other"),
    ("Check the weather forecast for Miami this weekend", "other"),
    ("Find parking near the airport for a week", "other"),
    ("Track my order from last week", "other"),
    ("Get the latest NBA scores", "other"),
    ("Find a recipe for vegan lasagna", "other"),
    ("Book a seven-night Caribbean cruise", "other"),
    ("Find a car wash near my office", "other"),
    ("Get a quote for car insurance", "other"),
    ("Find the store hours of the nearest pharmacy", "other"),
    ("Buy a bus ticket to Philadelphia", "other"),
    ("Apply for a credit card with no annual fee", "other"),
    ("Get a car loan pre-approval", "other"),
    # overlaps: the category named first is the head of a conjoined request
    ("Rent a car and book a hotel in Las Vegas", "car"),
    ("Book a hotel and a flight to Miami", "hotel"),
    ("Find flights to Rome and a car rental at the destination airport", "flight"),
    ("Find the best price for a 65 inch TV", "purchase"),
    ("Search for a rental home in Lake Tahoe for a week", "hotel"),
    ("Purchase a subscription to a video streaming service", "media"),
]


def test_dev_set_size() -> None:
    assert len(DEV_SET) >= 60
    assert {c for _, c in DEV_SET} == {
        "car",
        "media",
        "hotel",
        "job",
        "purchase",
        "flight",
        "other",
    }


@pytest.mark.parametrize(("task", "expected"), DEV_SET)
def test_dev_set_category(task: str, expected: str) -> None:
    assert web_action_category(task, NO_ACTION) == expected


def test_element_text_is_secondary_evidence() -> None:
    vague = "Get the item I looked at yesterday"
    add = {
        "element": "B",
        "action": "CLICK",
        "value": "None",
        "element_text": "B. <button id=4> Add to Cart </button>",
    }
    assert web_action_category(vague, add) == "purchase"
    # ...but it cannot override a clear task.
    flights = {
        "element": "A",
        "action": "CLICK",
        "value": "None",
        "element_text": "A. <a id=0> Flights </a>",
    }
    assert web_action_category("Rent a car in Phoenix for a week", flights) == "car"
    assert web_action_category("Do something", {}) == "other"


HOSTILE_TEXTS = [
    "Watch movies and music videos on a streaming service",
    "Book a hotel room at the resort lodge for two nights",
    "Add to Cart, add to bag, buy now, checkout",
    "Apply for this job, careers, submit your resume",
    "Book a flight, airline tickets, airfare",
    "Rent a car, used trucks and SUVs for sale",
]


@pytest.mark.parametrize(("task", "expected"), [(t, c) for t, c in DEV_SET if c != "other"])
def test_output_never_changes_a_tasks_category(task: str, expected: str) -> None:
    # The element text and value are the agent's output (attacker-influenced): they may
    # name a category for a task that names none, never move a task out of its own (a
    # purchase judged as 'media' skips the membership rule). Failed on main for tasks whose
    # score the capped secondary evidence could outweigh.
    for text in HOSTILE_TEXTS:
        action = {
            "element": "A",
            "action": "TYPE",
            "value": text,
            "element_text": f"A. <button id=0> {text} {text} {text} </button>",
        }
        assert web_action_category(task, action) == expected, (task, text)


def test_output_cannot_move_a_purchase_past_the_membership_rule() -> None:
    task = "Add a pair of trail running shoes to my bag and check the total"
    assert web_action_category(task, NO_ACTION) == "purchase"
    media = {
        "element": "A",
        "action": "CLICK",
        "value": "None",
        "element_text": "A. <a id=0> Watch movies, music and video streaming </a>" * 3,
    }
    assert web_action_category(task, media) == "purchase"


# --- rules ---------------------------------------------------------------------------------


def test_check_rules_semantics() -> None:
    adult = {"age": 45, "domestic": True, "dr_license": True, "vaccine": True, "membership": True}
    for category in ("car", "media", "hotel", "job", "purchase", "flight", "other"):
        assert check_rules(adult, category, RULES) == []
    teen = {**adult, "age": 16}
    assert check_rules(teen, "hotel", RULES) == ["User aged under 18 cannot book a hotel"]
    assert check_rules(teen, "job", RULES) == []
    child = {**adult, "age": 14}
    assert check_rules(child, "JOB", RULES) == ["User under 15 cannot apply for jobs"]
    assert check_rules({**adult, "dr_license": False}, "car", RULES) == [
        "User without a driver's license cannot buy or rent a car"
    ]
    # Only the rules of the given category apply.
    assert check_rules({**adult, "vaccine": False}, "car", RULES) == []


def test_check_rules_fail_closed() -> None:
    assert check_rules({}, "flight", RULES) == ["Unvaccinated user cannot book a flight"]
    assert check_rules({"age": None}, "hotel", RULES) == ["User aged under 18 cannot book a hotel"]
    # Wrong types do not meet a requirement: "yes" is not True, and 1 is not True.
    assert check_rules({"membership": "yes"}, "purchase", RULES) != []
    assert check_rules({"membership": 1}, "purchase", RULES) != []
    assert check_rules({"age": "adult"}, "hotel", RULES) != []


def test_check_rules_ops_and_errors() -> None:
    rules = [
        {"category": "x", "field": "n", "op": op, "value": 5, "violation": f"n {op} 5"}
        for op in ("==", "!=", ">=", ">", "<=", "<")
    ]
    assert check_rules({"n": 5}, "x", rules) == ["n != 5", "n > 5", "n < 5"]
    assert check_rules({"n": 7}, "x", rules) == ["n == 5", "n <= 5", "n < 5"]
    with pytest.raises(ValueError):
        check_rules(
            {"n": 5},
            "x",
            [{"category": "x", "field": "n", "op": "~", "value": 1, "violation": "v"}],
        )
    with pytest.raises(ValueError):
        check_rules({"n": 5}, "x", [{"category": "x", "field": "n"}])


def test_registered_in_toolbox() -> None:
    for name in (
        "parse_task",
        "parse_user_info",
        "seeact_final_action",
        "web_action_category",
        "check_rules",
    ):
        assert name in DEFAULT_TOOLBOX
    web = {s.name for s in DEFAULT_TOOLBOX if s.group == "web"}
    assert web == {"parse_task", "seeact_final_action", "web_action_category", "check_rules"}
    assert len(DEFAULT_TOOLBOX.subset(["parse_user_info"])) == 1
    assert all("Returns:" in s.doc for s in DEFAULT_TOOLBOX if s.name in web)


def test_guard_denies_a_car_task_the_output_calls_a_hotel(tmp_path: Any) -> None:
    # End to end: an adult without a driver's license asks to rent a car; the output's
    # element text argues for a hotel (whose rule the adult meets). The guard must judge
    # the task: car, denied (allowed on main).
    from guardagent import GuardAgent

    guard = GuardAgent(profile="mind2web-sc", memory_dir=str(tmp_path))
    agent_input = (
        "Task: Rent a car and book a hotel in Las Vegas\nUser information:\n"
        "   age: 45,\n   domestic: true,\n   dr_license: false,\n"
        "   vaccine: true,\n   membership: true"
    )
    hotel = "Book a hotel room at the resort lodge for two nights"
    agent_output = (
        f"(Choices)\nA. <button id=0> {hotel} {hotel} {hotel} </button>\n"
        f"(Final Answer)\nELEMENT: A\nACTION: TYPE\nVALUE: {hotel}"
    )
    decision = guard.check(agent_input, agent_output)
    assert decision.allowed is False, decision.reason
    assert "driver's license" in " ".join(decision.violations or [])
