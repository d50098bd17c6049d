"""Writes the shipped tool-calling and structured-output cases (deterministic: the same seed writes the same files;
run it again after editing the lists below, and bump VERSION when a case changes).

    python tasks/calls/make_cases.py            # data/eh_tools.jsonl and data/eh_json.jsonl, seed 20261204
    python tasks/calls/make_cases.py --seed 7 --out /tmp/cases

eh_tools: chat completions with `tools` and `tool_choice` (OpenAI's tools API). Eight function schemas with nested
objects, enums, arrays, integer ranges, a pattern and optional arguments (one with a default); each case offers the
right tool among one to three others, and asks in one of three ways: `required` (a call is due, which one is the
model's choice), a named tool, or `auto`, where some requests need a tool and others (chit-chat, general knowledge)
need none. Every argument the expected call holds is stated in the request, so a correct call is determined.
Tools are `strict` (OpenAI's field): an engine that pins argument schemas pins them.

eh_json: chat completions with `response_format` {type: json_schema}: extraction of stated facts into an object
(flat, nested, with enums, arrays, booleans and numbers) and one-of-several choices as a top-level enum.

Each line: {"id", "kind": "tools"|"json", "request": {messages, tools?, tool_choice?, parallel_tool_calls?,
response_format?}, "expected": {"name", "arguments"} | null (no call due) | a JSON value}.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERSION = 1
SEED = 20261204
TOOL_CASES = 200
JSON_CASES = 160

CITIES = ["Paris", "Rome", "Lisbon", "Oslo", "Cairo", "Lima", "Tokyo", "Berlin", "Madrid", "Dublin", "Vienna",
          "Athens", "Seoul", "Nairobi", "Toronto", "Chicago", "Denver", "Sydney", "Prague", "Warsaw"]
NAMES = ["Maria", "John", "Aisha", "Kenji", "Lucas", "Emma", "Omar", "Sofia", "Liam", "Chloe", "Ivan", "Priya",
         "Noah", "Elena", "David", "Zoe", "Hugo", "Mia", "Pedro", "Nina"]
DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
CURRENCIES = ["USD", "EUR", "GBP", "JPY", "CHF"]
CATEGORIES = ["books", "shoes", "phones", "toys", "games"]
PRODUCTS = {"books": ["a cookbook", "a mystery novel"], "shoes": ["running shoes", "hiking boots"],
            "phones": ["a cheap phone", "a phone case"], "toys": ["a puzzle", "a teddy bear"],
            "games": ["a chess set", "a card game"]}
ITEMS = ["notebooks", "pencils", "mugs", "lamps", "chairs", "candles", "towels", "plates"]
RESTAURANTS = ["Luigi's", "The Green Fork", "Sakura", "Casa Mia", "Blue Harbor", "Golden Dragon"]
EVENTS = ["team lunch", "book club", "project review", "yoga class", "budget meeting", "birthday party"]
COLORS = ["red", "blue", "green", "yellow", "white", "black", "orange"]
NO_TOOL = ["Tell me a short joke about cats.", "What is the capital of France?", "Thank you, that is all for today.",
           "How many legs does a spider have?", "Write one sentence about the sea.", "Hello! How are you?",
           "What is the opposite of hot?", "Name a color of the rainbow.", "Who wrote Romeo and Juliet?",
           "Say good night to me."]

TOOLS = {
    "get_weather": {
        "description": "Get the current weather in a city.",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["city"], "properties": {
            "city": {"type": "string", "description": "the city's name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}}}},
    "set_alarm": {
        "description": "Set an alarm at a time of day (24-hour clock).",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["hour", "minute"],
                       "properties": {"hour": {"type": "integer", "minimum": 0, "maximum": 23},
                                      "minute": {"type": "integer", "minimum": 0, "maximum": 59},
                                      "label": {"type": "string"}}}},
    "convert_currency": {
        "description": "Convert an amount of money from one currency to another.",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["amount", "source", "target"],
                       "properties": {"amount": {"type": "number", "minimum": 0},
                                      "source": {"type": "string", "enum": CURRENCIES},
                                      "target": {"type": "string", "enum": CURRENCIES}}}},
    "create_event": {
        "description": "Put an event in the calendar on a day of the week, with its attendees.",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["title", "day", "attendees"],
                       "properties": {"title": {"type": "string"}, "day": {"type": "string", "enum": DAYS},
                                      "attendees": {"type": "array", "items": {"type": "string"}, "minItems": 1}}}},
    "search_products": {
        "description": "Search the shop's products, optionally filtered by category and highest price.",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["query"], "properties": {
            "query": {"type": "string"},
            "filters": {"type": "object", "additionalProperties": False, "properties": {
                "category": {"type": "string", "enum": CATEGORIES}, "max_price": {"type": "number"}}}}}},
    "send_message": {
        "description": "Send a short text message to a person.",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["recipient", "text"],
                       "properties": {"recipient": {"type": "string"}, "text": {"type": "string"}}}},
    "book_table": {
        "description": "Book a table at a restaurant for a number of people at a time (HH:MM).",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["restaurant", "people", "time"],
                       "properties": {"restaurant": {"type": "string"},
                                      "people": {"type": "integer", "minimum": 1, "maximum": 20},
                                      "time": {"type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$"}}}},
    "calculate_tip": {
        "description": "Compute the tip on a restaurant bill.",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["bill", "percent"],
                       "properties": {"bill": {"type": "number", "minimum": 0},
                                      "percent": {"type": "integer", "minimum": 0, "maximum": 100}}}},
}
TOOL_SYSTEM = "You are an assistant that can call functions. Call a function when one fits the request."
JSON_SYSTEM = "Answer with JSON only, following the requested format."


def _tool(name: str) -> dict:
    return {"type": "function", "function": {"name": name, "strict": True, **TOOLS[name]}}


def _call(rng: random.Random, name: str) -> tuple[str, dict]:
    """(request, expected arguments) for one tool, every argument stated in the request."""
    if name == "get_weather":
        city = rng.choice(CITIES)
        if rng.random() < 0.4:
            unit = rng.choice(["celsius", "fahrenheit"])
            return rng.choice([f"What is the weather in {city} in {unit}?",
                               f"Give me the current weather for {city}, in degrees {unit}."]), {"city": city, "unit": unit}
        return rng.choice([f"What's the weather like in {city}?", f"Is it raining in {city} right now?"]), {"city": city}
    if name == "set_alarm":
        hour, minute = rng.randrange(24), rng.choice([0, 5, 10, 15, 20, 30, 45, 50])
        if rng.random() < 0.3:
            label = rng.choice(["gym", "meds", "call mom", "standup"])
            return f"Set an alarm at {hour:02d}:{minute:02d} labelled {label}.", {"hour": hour, "minute": minute,
                                                                                  "label": label}
        return rng.choice([f"Set an alarm for {hour:02d}:{minute:02d}.", f"Wake me up at {hour:02d}:{minute:02d}."]), \
            {"hour": hour, "minute": minute}
    if name == "convert_currency":
        amount = rng.choice([5, 10, 20, 50, 75, 100, 250, 1000])
        source, target = rng.sample(CURRENCIES, 2)
        return f"Convert {amount} {source} to {target}.", {"amount": amount, "source": source, "target": target}
    if name == "create_event":
        title, day = rng.choice(EVENTS), rng.choice(DAYS)
        people = rng.sample(NAMES, rng.choice([1, 2, 3]))
        listed = people[0] if len(people) == 1 else ", ".join(people[:-1]) + " and " + people[-1]
        return (f"Add a {title} on {day.capitalize()} with {listed} to my calendar.",
                {"title": title, "day": day, "attendees": people})
    if name == "search_products":
        category = rng.choice(CATEGORIES)
        query = rng.choice(PRODUCTS[category])
        roll = rng.random()
        if roll < 0.35:
            return f"Search the shop for {query}.", {"query": query}
        if roll < 0.7:
            price = rng.choice([10, 20, 30, 50, 100])
            return (f"Find {query} in {category} for at most {price} dollars.",
                    {"query": query, "filters": {"category": category, "max_price": price}})
        return f"Look for {query} in the {category} category.", {"query": query, "filters": {"category": category}}
    if name == "send_message":
        who = rng.choice(NAMES)
        text = rng.choice(["I am running late", "See you at noon", "Happy birthday", "Call me back", "Dinner is ready"])
        return f"Send a message to {who} saying: {text}", {"recipient": who, "text": text}
    if name == "book_table":
        place, people = rng.choice(RESTAURANTS), rng.randrange(1, 9)
        time = f"{rng.randrange(11, 23):02d}:{rng.choice(['00', '15', '30', '45'])}"
        return (f"Book a table at {place} for {people} people at {time}.",
                {"restaurant": place, "people": people, "time": time})
    bill, percent = rng.choice([20, 35, 48, 60, 80, 120]), rng.choice([10, 15, 18, 20, 25])
    return f"What is a {percent} percent tip on a bill of {bill} dollars?", {"bill": bill, "percent": percent}


def tool_cases(rng: random.Random, n: int) -> list[dict]:
    names = sorted(TOOLS)
    cases = []
    for i in range(n):
        roll = rng.random()
        way = "required" if roll < 0.4 else "named" if roll < 0.6 else "auto" if roll < 0.8 else "none"
        target = rng.choice(names)
        offered = [target, *rng.sample([t for t in names if t != target], rng.choice([1, 2, 3]))]
        rng.shuffle(offered)
        if way == "none":
            text, expected = rng.choice(NO_TOOL), None
        else:
            text, arguments = _call(rng, target)
            expected = {"name": target, "arguments": arguments}
        request = {"messages": [{"role": "system", "content": TOOL_SYSTEM}, {"role": "user", "content": text}],
                   "tools": [_tool(t) for t in offered], "parallel_tool_calls": False,
                   "tool_choice": ({"type": "function", "function": {"name": target}} if way == "named"
                                   else "required" if way == "required" else "auto")}
        cases.append({"id": f"tools-{i:03d}", "kind": "tools", "way": way, "request": request, "expected": expected})
    return cases


def _schema(properties: dict, required: list[str] | None = None) -> dict:
    return {"type": "object", "additionalProperties": False, "properties": properties,
            "required": required if required is not None else list(properties)}


def _json_case(rng: random.Random) -> tuple[str, str, dict, object]:
    """(shape, request, schema, expected value)."""
    shape = rng.choice(["person", "order", "sentiment", "colors", "meeting", "temperature", "choice", "flag"])
    if shape == "person":
        name, age, city = rng.choice(NAMES), rng.randrange(18, 90), rng.choice(CITIES)
        return shape, (f"Extract the person's name, age and city: {name} is {age} years old and lives in {city}."), \
            _schema({"name": {"type": "string"}, "age": {"type": "integer"}, "city": {"type": "string"}}), \
            {"name": name, "age": age, "city": city}
    if shape == "order":
        item, quantity, express = rng.choice(ITEMS), rng.randrange(1, 13), rng.random() < 0.5
        ship = "with express shipping" if express else "with standard shipping, no rush"
        return shape, f"Turn this order into JSON: I would like {quantity} {item}, {ship}.", \
            _schema({"item": {"type": "string"}, "quantity": {"type": "integer", "minimum": 1},
                     "express": {"type": "boolean"}}), {"item": item, "quantity": quantity, "express": express}
    if shape == "sentiment":
        value, text = rng.choice([("positive", "I loved it, the best meal I have had all year!"),
                                  ("positive", "Great service and a wonderful view."),
                                  ("negative", "Terrible. The food was cold and the waiter was rude."),
                                  ("negative", "I hated every minute of this film."),
                                  ("neutral", "The package arrived on Tuesday."),
                                  ("neutral", "The store opens at nine.")])
        return shape, f"Classify the sentiment of this review: {text}", \
            _schema({"sentiment": {"type": "string", "enum": ["positive", "negative", "neutral"]}}), {"sentiment": value}
    if shape == "colors":
        picked = rng.sample(COLORS, rng.choice([1, 2, 3]))
        listed = picked[0] if len(picked) == 1 else ", ".join(picked[:-1]) + " and " + picked[-1]
        return shape, f"List the colors mentioned: the flag is {listed}.", \
            _schema({"colors": {"type": "array", "items": {"type": "string", "enum": COLORS}, "minItems": 1}}), \
            {"colors": picked}
    if shape == "meeting":
        day, hour, room = rng.choice(DAYS), rng.randrange(8, 18), rng.choice(["A1", "B2", "C3", "Lab", "Annex"])
        return shape, f"Extract the meeting: we meet on {day.capitalize()} at {hour} o'clock in room {room}.", \
            _schema({"meeting": _schema({"day": {"type": "string", "enum": DAYS},
                                         "hour": {"type": "integer", "minimum": 0, "maximum": 23}}),
                     "room": {"type": "string"}}), {"meeting": {"day": day, "hour": hour}, "room": room}
    if shape == "temperature":
        value, unit = rng.randrange(-10, 40), rng.choice(["celsius", "fahrenheit"])
        return shape, f"Extract the reading: the thermometer shows {value} degrees {unit}.", \
            _schema({"value": {"type": "number"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}), \
            {"value": value, "unit": unit}
    if shape == "choice":
        right, wrong, question = rng.choice([("dog", ["table", "cloud"], "an animal"),
                                             ("apple", ["chair", "river"], "a fruit"),
                                             ("blue", ["seven", "spoon"], "a color"),
                                             ("hammer", ["rabbit", "rain"], "a tool"),
                                             ("Paris", ["banana", "piano"], "a city")])
        options = [right, *wrong]
        rng.shuffle(options)
        return shape, f"Which of these is {question}: {', '.join(options)}? Answer with one of them.", \
            {"type": "string", "enum": options}, right
    a, b = rng.randrange(1, 20), rng.randrange(1, 20)
    return shape, f"Is {a} greater than {b}? Answer true or false.", _schema({"answer": {"type": "boolean"}}), \
        {"answer": a > b}


def json_cases(rng: random.Random, n: int) -> list[dict]:
    cases = []
    for i in range(n):
        shape, text, schema, expected = _json_case(rng)
        request = {"messages": [{"role": "system", "content": JSON_SYSTEM}, {"role": "user", "content": text}],
                   "response_format": {"type": "json_schema",
                                       "json_schema": {"name": shape, "schema": schema, "strict": True}}}
        cases.append({"id": f"json-{i:03d}", "kind": "json", "way": shape, "request": request, "expected": expected})
    return cases


def write(out: Path, seed: int = SEED) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = {"eh_tools": tool_cases(random.Random(seed), TOOL_CASES),
             "eh_json": json_cases(random.Random(seed + 1), JSON_CASES)}
    paths = {}
    for task, cases in files.items():
        path = out / f"{task}.jsonl"
        path.write_text("".join(json.dumps({**case, "version": VERSION}) + "\n" for case in cases),
                        encoding="utf-8")
        paths[task] = path
    return paths


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", type=Path, default=HERE / "data")
    args = parser.parse_args()
    for name, path in write(args.out, args.seed).items():
        print(f"{name}: {path}")
