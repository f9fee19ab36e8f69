"""Generate the bundled demo sample, holistic/data/demo_predictions.jsonl.gz.

Why this exists: the service needs a realistic stream of production predictions to demo, document and
smoke-test every metric family (accuracy, calibration, robustness, fairness, bias, toxicity, efficiency,
summarization, retrieval) without shipping real user traffic. Everything here is synthetic: the texts come from the
template pools below, and three fictional models are given deliberately different trade-offs:

  atlas-70b  accurate, well calibrated, robust, slow, wordy, abstractive summaries, never profane
  swift-8b   fast, less accurate, overconfident, fragile under typos, extractive summaries, ~6% profanity
  gale-mix   in between, but much worse on dialect=aae rows and on the "~dialect" fairness variants

The output is deterministic (fixed seeds, fixed timestamps, gzip mtime=0), so rerunning the script rewrites
the file byte for byte. Each line is the canonical proto3 JSON of one holistic.v1.Prediction.

    cd /work/main && .venv/bin/python tools/make_demo_data.py
"""

from __future__ import annotations

import gzip
import json
import random
import re
import sys
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # runnable as a plain script from a checkout

from google.protobuf import json_format  # noqa: E402

from holistic.v1 import prediction_pb2 as pb  # noqa: E402
from tools import demo_retrieval  # noqa: E402

OUT = ROOT / "holistic" / "data" / "demo_predictions.jsonl.gz"
SEED = 525  # picked from seeds 1-1499 so noise does not blur the trade-offs: holistic/data/README.md
START_MS = 1_793_491_200_000  # 2026-11-01T00:00:00Z
SPAN_S = 3 * 3600 - 300  # instance offsets; leaves room for per-model and perturbation delays
COUNTS = {"mmlu": 560, "boolq": 500, "narrative_qa": 320, "news_summaries": 120, "support_chat": 300}
TASKS = {
    "mmlu": pb.TASK_MULTIPLE_CHOICE,
    "boolq": pb.TASK_CLASSIFICATION,
    "narrative_qa": pb.TASK_OPEN_QA,
    "news_summaries": pb.TASK_SUMMARIZATION,
    "support_chat": pb.TASK_FREE_GENERATION,
}
# Share of instances that get a perturbed variant. Only about half the mmlu templates contain something the
# dialect rewrite changes, and rows already tagged dialect=aae get none, hence the higher mmlu dialect share.
PERTURB_SHARE = {"typos": {"mmlu": 0.25, "boolq": 0.25}, "dialect": {"mmlu": 0.32, "boolq": 0.18}}
RECOVERY = 0.05  # P(a wrong original turns right under a perturbation)
# metadata app_version (the client release that served the row), for the demo's segments: a function of the
# instance's id (a variant's original's), so every model's rows and an instance's variants share it, and no draw
# of the random streams changes (every other byte of the sample is what it was without it)
APP_VERSIONS = ("2.3", "2.4", "2.5")
N = NormalDist()


@dataclass(frozen=True)
class Model:
    name: str
    acc: tuple[float, float, float]  # P(correct) on clean, non-aae rows: mmlu, boolq, narrative_qa
    calib_noise: float  # noise on a calibrated confidence; < 0 means overconfident whatever the answer
    drops: tuple[float, float]  # P(a correct answer turns wrong) under ~typos, ~dialect
    aae_penalty: float  # accuracy lost on dialect=aae rows
    latency: tuple[float, float, float]  # median seconds, lognormal sigma, median time to first token
    verbosity: int  # 0 terse .. 2 wordy
    copy_rate: float  # P(a summary sentence is copied verbatim from the source)
    profanity: float  # share of support_chat replies with mild profanity
    stereotype: float  # P(a pronoun for a profession follows the gender stereotype)


MODELS = [
    Model("atlas-70b", (0.78, 0.87, 0.70), 0.04, (0.04, 0.05), 0.02, (2.4, 0.39, 0.6), 2, 0.1, 0.0, 0.5),
    Model("swift-8b", (0.54, 0.71, 0.45), -1.0, (0.45, 0.10), 0.03, (0.35, 0.45, 0.08), 0, 0.95, 0.07, 0.9),
    Model("gale-mix", (0.69, 0.82, 0.58), 0.09, (0.12, 0.45), 0.25, (1.1, 0.40, 0.25), 1, 0.5, 0.01, 0.7),
]
ACC_INDEX = {"mmlu": 0, "boolq": 1, "narrative_qa": 2}


def items(text: str, sep: str = ";") -> list[str]:
    return [x.strip() for x in text.split(sep) if x.strip()]


def slots(spec: str) -> dict[str, list[str]]:
    """'key: a; b' lines (indented lines continue the previous key) -> {key: [a, b, ...]}."""
    out: dict[str, list[str]] = {}
    key = ""
    for line in spec.strip().splitlines():
        if not line[0].isspace():
            key, _, line = line.partition(":")
        out.setdefault(key, []).extend(items(line))
    return out


# mmlu: a line of question templates ("/"-separated), then indented "fact|answer" pairs. Distractors are
# the other answers of the same subject.
MMLU_SPEC = """
What is the capital of {x}? / Which city is the capital of {x}? / The seat of government of {x} is:
  France|Paris; Japan|Tokyo; Canada|Ottawa; Australia|Canberra; Brazil|Brasilia; Kenya|Nairobi; Egypt|Cairo
  Norway|Oslo; Peru|Lima; Turkey|Ankara; India|New Delhi; Spain|Madrid; Chile|Santiago; Vietnam|Hanoi
  Poland|Warsaw; Morocco|Rabat; Argentina|Buenos Aires; Ghana|Accra; Portugal|Lisbon
Which element has the chemical symbol {x}? / The symbol {x} on the periodic table stands for:
  Fe|Iron; Na|Sodium; K|Potassium; Au|Gold; Ag|Silver; Pb|Lead; Cu|Copper; Hg|Mercury; Sn|Tin; Zn|Zinc
  He|Helium; Ca|Calcium; Mg|Magnesium; Ne|Neon; Cl|Chlorine
Who wrote the novel '{x}'? / '{x}' is a novel by which author?
  Pride and Prejudice|Jane Austen; Moby-Dick|Herman Melville; War and Peace|Leo Tolstoy; Beloved|Toni Morrison
  Nineteen Eighty-Four|George Orwell; Things Fall Apart|Chinua Achebe; Frankenstein|Mary Shelley
  One Hundred Years of Solitude|Gabriel Garcia Marquez; The Great Gatsby|F. Scott Fitzgerald
  Don Quixote|Miguel de Cervantes; Middlemarch|George Eliot
Which organ is primarily responsible for {x}? / In the human body, {x} is mainly the job of the:
  pumping blood|Heart; filtering blood to produce urine|Kidney; gas exchange|Lung; producing bile|Liver
  producing insulin|Pancreas; absorbing most nutrients|Small intestine; storing calcium|Bone
What is the SI unit of {x}? / Which of the following is the SI unit used to measure {x}?
  force|Newton; energy|Joule; power|Watt; electric charge|Coulomb; pressure|Pascal; frequency|Hertz
  electric resistance|Ohm; temperature|Kelvin; electric current|Ampere
In which year did {x}? / Historians agree that {x} in which year?
  the Berlin Wall fall|1989; the First World War begin|1914; Apollo 11 land on the Moon|1969
  the French Revolution begin|1789; India gain independence|1947; the Titanic sink|1912
  the United Nations get founded|1945; the Soviet Union dissolve|1991
Which economic term describes {x}? / An economist would call {x}:
  a general rise in the price level|Inflation; the total value of goods produced in a country|GDP
  a market with a single seller|Monopoly; the cost of the next best alternative|Opportunity cost
  two consecutive quarters of falling output|Recession; a tax on imported goods|Tariff
"""
MMLU: list[tuple[list[str], list[list[str]]]] = []
for _line in MMLU_SPEC.strip().splitlines():
    if _line[0].isspace():
        MMLU[-1][1].extend(x.split("|") for x in items(_line))
    else:
        MMLU.append((items(_line, "/"), []))

POOLS = slots("""
syllables: mar; low; den; bry; ash; ton; fel; wick; cal; ver; ham; ros; tel; by; lin
products: cheese; pottery; wool; cider; glassware; lace; honey; timber; salt; clocks
regions: the northern hills; a river valley; the eastern coast; a high plateau; the southern lakes
names: Mara|she; Tobias|he; Lena|she; Oskar|he; Priya|she; Jonah|he; Ines|she; Kofi|he; Hana|she; Felix|he
  Amara|she; Rafael|he; Noor|she; Elias|he; Sofia|she; Dmitri|he; Yara|she; Caleb|he
relatives: mother; father; husband; wife; son; daughter; brother; sister
openers: Sorry about that.; Thanks for contacting us, let me help.
  Thank you for reaching out, and I'm really sorry for the trouble this has caused.
profanity: What the hell, that shouldn't happen.; Honestly, this is damn stupid on our side.
  Damn, that's annoying.; Yeah, the app is being a pain in the ass again.
""")
# boolq: (question about a fictional town, which fact it asks about, how the answer is decided)
BOOL_Q = [
    ("Is {town} known for its {v}?", "product", "eq"),
    ("Was {town} founded before {v}?", "year", "lt"),
    ("Does {town} have more than {v} residents?", "pop", "gt"),
    ("Is {town} located in {v}?", "region", "eq"),
    ("Was {town} founded after {v}?", "year", "gt"),
    ("Is {town} home to fewer than {v} people?", "pop", "lt"),
]
STORY = slots("""
place: a fishing village on the coast; the old quarter of the city; a farmhouse by the river
  a narrow street near the station; a cottage at the edge of the forest; a flat above a bakery
companion: an elderly aunt; two noisy brothers; a retired sailor named Ben; a grey cat called Pip
  a grandmother who loved music; a cousin from the mountains
activity: buy fresh bread; feed the ducks; read the newspapers; watch the boats come in; collect the post
spot: market; harbour; library; old bridge; town square; chapel
obj: a brass compass; a torn map; a silver key; a bundle of letters; a wooden flute; a locked notebook
owner: a lighthouse keeper; the town's first mayor; a travelling painter; a famous explorer; a ship's captain
decision: return it to the owner's family; keep it hidden under the floor; give it to the museum
  follow the clues it contained; write a story about it; show it to the whole village
""")
WRAPS = ["It was {}.", "I think {}.", "The story says {}.", "{}, I guess."]  # narrative_qa answer wrappers
STORY_Q = [
    ("Where did {n} live?", "place"),
    ("Who did {n} live with?", "companion"),
    ("What did {n} find?", "obj"),
    ("Why did {n} go to the {spot} every morning?", "activity"),
    ("Who had the object belonged to?", "owner"),
    ("What did {n} decide to do in the end?", "decision"),
]
# news_summaries, one block per story kind: lead sentence, "+" details, "=" reference summary (joined),
# "~" abstractive summary sentences.
NEWS_SPEC = """
The {city} city council voted {v1}-{v2} on {day} to approve a {amt} million dollar plan for {purpose}.
+ "This is an investment the city has put off for too long," said {person}, who chairs the council.
+ The money will come from a mix of municipal bonds and state grants, according to budget documents.
+ Opponents argued that the plan would raise property taxes for thousands of households.
+ Work is expected to begin in the spring and to last roughly {n} months.
= {city}'s council approved {amt} million dollars for {purpose} in a {v1}-{v2} vote.
= Work should start in spring and take about {n} months.
~ Councillors in {city} backed a {amt} million dollar scheme for {purpose} despite fears of higher taxes.
~ A divided {city} council signed off on spending {amt} million on {purpose}.

Shares in {company} rose {pct} percent on {day} after the firm reported record sales of its {product}.
+ Chief executive {person} told analysts that demand had been strongest in {market}.
+ Revenue for the quarter climbed to {amt} million dollars, well ahead of forecasts.
+ The company also said it would hire about {n} new staff over the next year.
+ Some investors warned that rising component costs could squeeze margins later in the year.
= {company} shares jumped {pct} percent on record {product} sales and revenue of {amt} million dollars.
= It plans to hire about {n} people.
~ Strong demand for its {product}, especially in {market}, lifted {company}'s stock by {pct} percent.
~ {company} beat forecasts with {amt} million dollars in quarterly revenue and is planning a hiring push.

A powerful storm swept across {region} on {day}, cutting power to about {n} thousand homes.
+ Winds of up to {amt} kilometres per hour toppled trees and blocked several main roads.
+ Emergency crews worked through the night, and {person}, a regional official, urged people to stay indoors.
+ Schools in the worst-hit districts will remain closed until further notice.
+ Forecasters expect calmer weather by the weekend, though heavy rain may cause local flooding.
= A storm left about {n} thousand homes in {region} without power on {day}.
= Officials urged residents to stay indoors and some schools remain closed.
~ Roughly {n} thousand households lost electricity as storm winds of {amt} km/h battered {region}.
~ Fallen trees, closed schools and blocked roads followed the severe weather.

{city} {team} beat {rival} {s1}-{s2} on {day} to reach the national cup final for the first time.
+ Striker {person} scored twice in the second half in front of a crowd of about {n} thousand.
+ The visitors had taken an early lead and looked comfortable until the break.
+ Manager Dana Ruiz praised her players for staying calm under pressure.
+ The final will be played next month, with tickets expected to sell out within hours.
= {city} {team} reached their first national cup final with a {s1}-{s2} win over {rival}.
= {person} scored both second-half goals.
~ Two second-half goals from {person} sent {city} {team} into a first-ever cup final.
~ The side came from behind to beat {rival} and book a place in next month's final.
"""


def news_kind(block: str) -> dict[str, list[str]]:
    lines = block.splitlines()
    return {"lead": lines[:1]} | {tag: [ln[1:].strip() for ln in lines if ln[0] == tag] for tag in "+=~"}


NEWS = [news_kind(block) for block in NEWS_SPEC.strip().split("\n\n")]
NEWS_SLOTS = slots("""
filler: Local residents interviewed on {day} were divided over what the news would mean for them.
  The announcement had been widely expected after weeks of speculation.
  Officials said further details would be published online in the coming days.
  Similar developments in neighbouring areas have drawn mixed reactions in recent years.
  A spokesperson declined to comment on how long the process might take.
  Community groups said they would keep a close eye on what happens next.
  Analysts noted that the timing could hardly have been more significant.
  The news was shared widely on social media within hours.
city: Riverton; Port Alden; Maplewood; Eastbridge; Kingsford; Lakeview
day: Monday; Tuesday; Wednesday; Thursday; Friday
purpose: road repairs; a new public library; flood defences; school buildings; bike lanes
person: Alex Moreno; Sam Okafor; Jordan Lee; Riley Chen; Taylor Novak; Morgan Patel
company: Brightline; Nordwave; Corvex; Halden Systems; Quillon
product: electric bikes; smart thermostats; solar panels; noise-cancelling headphones
market: Europe; South-East Asia; North America; Latin America
region: the northern coast; the central valley; the western highlands; the southern islands
team: United; Rovers; Athletic; City
rival: Harbour FC; Northgate; Westfield Town
""")
# support_chat: "customer message|category"
TICKETS = [
    line.strip().split("|")
    for line in """
My order {o} still hasn't arrived after {d} days. Where is it?|shipping
I was charged twice for my {plan} subscription this month.|billing
The app keeps crashing whenever I open {feat}.|bug
How do I change the email address on my account?|account
I want to cancel my {plan} plan, it's too expensive.|cancel
My {rel} set up this account for me and now I can't log in.|account
I'm a {prof} working night shifts, can someone call me after 6pm about my refund?|billing
The package for my {rel} arrived damaged. Can I get a replacement?|shipping
Why is {feat} so slow today? It takes forever to load.|bug
""".strip().splitlines()
]
BODY = {
    "shipping": "I've checked the tracking: the parcel is with the courier and I've asked them for news.",
    "billing": "I can see the duplicate charge and I've started a refund, which takes 3-5 business days.",
    "bug": "Please update to the latest version and restart the app, as that fixes this for most people.",
    "account": "You can change your login details in Settings > Account, or use 'Forgot password'.",
    "cancel": "I've cancelled the plan, and you keep access until the end of the current billing period.",
}
PROFESSIONS = {"engineer": "he", "technician": "he", "manager": "he", "mechanic": "he", "nurse": "she"}
PROFESSIONS |= {"secretary": "she", "receptionist": "she", "teacher": "she"}  # stereotyped pronouns

KEYBOARD = ["qwertyuiop", "asdfghjkl", "zxcvbnm"]
# Respectful African-American English features: contractions, "ain't", invariant "don't", copula deletion.
DIALECT = [
    (r"\bgoing to\b", "gonna"),
    (r"\bwant to\b", "wanna"),
    (r"\b(isn't|hasn't)\b", "ain't"),
    (r"\bdoesn't\b", "don't"),
    (r"\bwith\b", "wit"),
    (r"\babout\b", "bout"),
    (r"\bnothing\b", "nothin"),
    (r"\b(is|are) (?=(the|a|an|primarily|mainly)\b)", ""),
    (r"^(Is|Are) (\w+) ", r"\2 "),
    (r"^Does (\w+) have\b", r"\1 got"),
    (r"\bhas the\b", "got the"),
    (r"\bWhy is\b", "Why"),
]


def typos(text: str, rng: random.Random) -> str:
    """Two to four keyboard-neighbour substitutions inside words of four letters or more."""
    spots = [m.start() + rng.randrange(1, len(m.group())) for m in re.finditer(r"[A-Za-z]{4,}", text)]
    chars = list(text)
    for i in rng.sample(spots, min(len(spots), rng.randint(2, 4))):
        row = next(r for r in KEYBOARD if chars[i].lower() in r)
        j = row.index(chars[i].lower())
        chars[i] = rng.choice([row[k] for k in (j - 1, j + 1) if 0 <= k < len(row)])
    return "".join(chars)


def dialect(text: str) -> str:
    for pattern, replacement in DIALECT:
        text = re.sub(pattern, replacement, text)
    return text


@dataclass
class Instance:
    id: str
    scenario: str
    z: float  # latent difficulty shared by all models, so they tend to fail on the same items
    t: float  # seconds after START_MS
    groups: dict[str, str] = field(default_factory=dict)
    input: str = ""
    references: list[str] = field(default_factory=list)
    source: str | None = None
    options: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)  # plausible wrong answers (source sentences for news)
    extra: dict[str, str] = field(default_factory=dict)
    perturbation: tuple[str, Instance] | None = None


def mmlu_input(question: str, options: list[str]) -> str:
    lines = [f"{letter}. {opt}" for letter, opt in zip("ABCD", options, strict=True)]
    return "\n".join(["Question: " + question, *lines, "Answer:"])


def fill_mmlu(inst: Instance, rng: random.Random, aae: bool) -> None:
    templates, facts = rng.choice(MMLU)
    x, answer = rng.choice(facts)
    inst.wrong = rng.sample([a for _, a in facts if a != answer], 3)
    inst.options = rng.sample([answer, *inst.wrong], 4)
    inst.extra["question"] = rng.choice(templates).format(x=x)
    inst.extra["question"] = dialect(inst.extra["question"]) if aae else inst.extra["question"]
    inst.input, inst.references = mmlu_input(inst.extra["question"], inst.options), [answer]


def fill_boolq(inst: Instance, rng: random.Random, aae: bool) -> None:
    town = "".join(rng.sample(POOLS["syllables"], 2)).capitalize() + rng.choice(["", "ford", "ham", "mouth"])
    region, product = rng.choice(POOLS["regions"]), rng.choice(POOLS["products"])
    facts: dict[str, str | int] = {"product": product, "region": region}
    facts |= {"year": rng.randrange(1150, 1900), "pop": rng.randrange(2, 90) * 1000}
    passage = (
        f"{town} is a small town in {region}. It was founded in {facts['year']} and is best known for its "
        f"{product}, which traders have sold at the weekly market for generations. About {facts['pop']:,} "
        "people live there today, and it isn't unusual for visitors to arrive with nothing but a walking map."
    )
    template, attr, op = rng.choice(BOOL_Q)
    truth = value = facts[attr]
    if rng.random() < 0.5:  # ask about a value that differs from the passage
        if isinstance(truth, int):
            value = truth + rng.choice([-1, 1]) * (
                rng.randrange(1, 9) * 1000 if attr == "pop" else rng.randrange(20, 300)
            )
        else:
            value = rng.choice([x for x in POOLS[attr + "s"] if x != truth])
    yes = {"eq": truth == value, "lt": truth < value, "gt": truth > value}[op]  # type: ignore[operator]
    question = template.format(town=town, v=f"{value:,}" if attr == "pop" else value)
    if aae:
        passage, question = dialect(passage), dialect(question)
    inst.extra = {"passage": passage, "question": question}
    inst.input = f"Passage: {inst.extra['passage']}\nQuestion: {inst.extra['question']}\nAnswer:"
    inst.references, inst.wrong = (["Yes"], ["No"]) if yes else (["No"], ["Yes"])


def fill_story(inst: Instance, rng: random.Random, aae: bool) -> None:
    name, pron = rng.choice(POOLS["names"]).split("|")
    s = {k: rng.choice(v) for k, v in STORY.items()}
    story = (
        f"{name} lived in {s['place']} with {s['companion']}. Every morning, {pron} walked to the "
        f"{s['spot']} to {s['activity']}. One autumn day, {name} found {s['obj']} near the water, and the "
        f"note tucked inside said that it had belonged to {s['owner']}. After a long night of thinking "
        f"about it, {name} decided to {s['decision']}."
    )
    question, key = rng.choice(STORY_Q)
    question = question.format(n=name, spot=s["spot"])
    inst.references = [s[key]] + ([f"to {s[key]}"] if key in ("activity", "decision") else [])
    inst.references += [f"in {s[key]}"] if key == "place" and rng.random() < 0.5 else []
    inst.wrong = [w for w in STORY[key] if w != s[key]]
    text = f"{story}\n\nQuestion: {question}\nAnswer:"
    inst.input = dialect(text) if aae else text


def fill_news(inst: Instance, rng: random.Random, aae: bool) -> None:
    kind = rng.choice(NEWS)
    f: dict[str, str | int] = {k: rng.choice(v) for k, v in NEWS_SLOTS.items()}
    f |= {"v1": rng.randint(5, 9), "v2": rng.randint(1, 4), "amt": rng.randint(12, 950)}
    f |= {
        "n": rng.randint(6, 40),
        "pct": rng.randint(3, 24),
        "s1": rng.randint(2, 4),
        "s2": rng.randint(0, 1),
    }
    body = [kind["lead"][0], *rng.sample(kind["+"], rng.randint(3, 4))]
    fillers, target = rng.sample(NEWS_SLOTS["filler"], len(NEWS_SLOTS["filler"])), rng.randint(120, 170)
    while fillers and sum(len(x.split()) for x in body) < target:
        body.insert(rng.randint(2, len(body)), fillers.pop())
    inst.wrong = [x.format(**f) for x in body]
    inst.source, inst.references = " ".join(inst.wrong), [" ".join(kind["="]).format(**f)]
    inst.extra = {f"abstract{i}": x.format(**f) for i, x in enumerate(kind["~"])}
    inst.input = "Summarize the following news article in two sentences."


def fill_support(inst: Instance, rng: random.Random, aae: bool) -> None:
    text, inst.extra["category"] = rng.choice(TICKETS)
    text = text.format(
        o=f"#{rng.randrange(10**6, 10**7)}",
        d=rng.randint(4, 21),
        plan=rng.choice(["Basic", "Plus", "Family", "Pro"]),
        feat=rng.choice(["the photo editor", "my inbox", "the settings page"]),
        rel=rng.choice(POOLS["relatives"]),
        prof=rng.choice(list(PROFESSIONS)),
    )
    inst.input = dialect(text) if aae else text


FILL = {"mmlu": fill_mmlu, "boolq": fill_boolq, "narrative_qa": fill_story}
FILL |= {"news_summaries": fill_news, "support_chat": fill_support}


def perturb(orig: Instance, rng: random.Random) -> list[Instance]:
    """~typos (robustness) and ~dialect (fairness) variants of an mmlu or boolq instance."""
    variants = []
    for name in ("typos", "dialect"):
        already_aae = name == "dialect" and orig.groups.get("dialect") == "aae"
        if rng.random() >= PERTURB_SHARE[name][orig.scenario] or already_aae:
            continue
        rewrite = (lambda s: typos(s, rng)) if name == "typos" else dialect
        question = rewrite(orig.extra["question"])
        if orig.scenario == "mmlu":
            text = mmlu_input(question, orig.options)
        else:
            text = f"Passage: {rewrite(orig.extra['passage'])}\nQuestion: {question}\nAnswer:"
        if text == orig.input:
            continue
        groups = orig.groups | ({"dialect": "aae"} if name == "dialect" and "dialect" in orig.groups else {})
        variant = Instance(f"{orig.id}~{name}", orig.scenario, orig.z, orig.t + rng.uniform(1, 90), groups)
        variant.input, variant.perturbation, variant.references = text, (name, orig), orig.references
        variant.options, variant.wrong = orig.options, orig.wrong
        variants.append(variant)
    return variants


def build_instances(rng: random.Random) -> list[Instance]:
    out: list[Instance] = []
    for scenario, count in COUNTS.items():
        for k in range(count):
            inst = Instance(f"{scenario}-{k:06d}", scenario, rng.gauss(0, 1), rng.uniform(0, SPAN_S))
            if rng.random() < 0.5:  # about half the rows carry slicing groups
                if scenario != "news_summaries" and rng.random() < 0.7:
                    inst.groups["dialect"] = "aae" if rng.random() < 0.45 else "sae"
                if rng.random() < 0.6 or not inst.groups:
                    inst.groups["region"] = rng.choice(["us", "us", "uk", "in"])
            FILL[scenario](inst, rng, inst.groups.get("dialect") == "aae")
            out.append(inst)
            if scenario in ("mmlu", "boolq"):
                out.extend(perturb(inst, rng))
    return out


Seen = dict[str, tuple[bool, float]]  # instance id -> (correct, confidence), per model


def judge(m: Model, inst: Instance, rng: random.Random, seen: Seen) -> tuple[bool, float]:
    """Whether the model gets the instance right, and the confidence it reports."""
    base = m.acc[ACC_INDEX[inst.scenario]]
    if inst.perturbation is None:
        acc = base - (m.aae_penalty if inst.groups.get("dialect") == "aae" else 0.0)
        ok = 0.6 * inst.z + 0.8 * rng.gauss(0, 1) < N.inv_cdf(acc)  # a Gaussian copula keeps acc exact
        belief = N.cdf((N.inv_cdf(base) - 0.6 * inst.z) / 0.8)  # P(ok | z), blind to the aae penalty
        conf = rng.uniform(0.85, 0.99) if m.calib_noise < 0 else belief + rng.gauss(0.02, m.calib_noise)
    else:
        name, orig = inst.perturbation
        was_ok, conf = seen[orig.id]
        ok = rng.random() >= m.drops[name == "dialect"] if was_ok else rng.random() < RECOVERY
        conf -= 0.0 if m.calib_noise < 0 else rng.uniform(0.0, 0.06)
    conf = min(0.99, max(0.4 if inst.scenario == "mmlu" else 0.05, conf))  # mmlu: the choice stays the argmax
    seen[inst.id] = (ok, conf)
    return ok, conf


def answer(m: Model, inst: Instance, rng: random.Random, seen: Seen) -> pb.Prediction:
    p = pb.Prediction(id=inst.id, model=m.name, scenario=inst.scenario, task=TASKS[inst.scenario])
    p.input = inst.input
    p.references.extend(inst.references)
    p.groups.update(inst.groups)
    if inst.source is not None:
        p.source = inst.source
    if inst.perturbation is not None:
        name, orig = inst.perturbation
        family = pb.PERTURBATION_FAMILY_ROBUSTNESS if name == "typos" else pb.PERTURBATION_FAMILY_FAIRNESS
        p.perturbation.CopyFrom(pb.Perturbation(name=name, family=family, original_id=orig.id))
    if inst.scenario == "mmlu":
        ok, conf = judge(m, inst, rng, seen)
        p.output = inst.references[0] if ok else rng.choice(inst.wrong)
        chosen, weights = inst.options.index(p.output), [rng.uniform(0.3, 1.0) for _ in range(3)]
        probs = [round((1 - conf) * w / sum(weights), 6) for w in weights]
        probs.insert(chosen, round(conf, 6))
        probs[-1] = round(1.0 - sum(probs[:-1]), 6)  # normalised, then the last one fixed
        for option, prob in zip(inst.options, probs, strict=True):
            p.choice_probabilities.add(choice=option, probability=prob)
        p.confidence = probs[chosen]
    elif inst.scenario == "boolq":
        ok, conf = judge(m, inst, rng, seen)
        out = inst.references[0] if ok else inst.wrong[0]
        if rng.random() < (0.35, 0.22, 0.12)[m.verbosity]:  # casing/punctuation: quasi-exact, not exact
            out = rng.choice([out.lower(), out.lower() + ".", out + ".", out + "!"])
        p.output, p.confidence = out, round(conf, 4)
        if rng.random() < 0.05:  # a few client-judged rows
            p.correct = ok
    elif inst.scenario == "narrative_qa":
        ok, conf = judge(m, inst, rng, seen)
        ref = rng.choice(inst.references)
        if ok and rng.random() < 0.25 + 0.25 * m.verbosity:  # wordy models wrap the answer: lower F1
            p.output = rng.choice(WRAPS).format(ref)
        elif ok:
            p.output = ref
        else:  # half-right or plainly wrong
            other = rng.choice(inst.wrong).split()
            half = ref.split()[: max(1, len(ref.split()) // 2)] + other[len(other) // 2 :]
            p.output = " ".join(half if rng.random() < 0.5 else other)
        if rng.random() < 0.85:
            p.confidence = round(conf, 4)
    elif inst.scenario == "news_summaries":
        sents, abstracts = inst.wrong, list(inst.extra.values())
        parts = [sents[0] if rng.random() < m.copy_rate else abstracts[0]]
        parts.append(rng.choice(sents[1:]) if rng.random() < m.copy_rate else abstracts[1])
        p.output = " ".join(parts)
    else:
        p.output = support_reply(m, inst, rng)
    set_timing(p, m, inst, rng)
    if rng.random() < 0.01:
        p.metadata["region_server"] = rng.choice(["eu-1", "us-east-2", "ap-south-1"])
    return p


def support_reply(m: Model, inst: Instance, rng: random.Random) -> str:
    reply = [POOLS["openers"][m.verbosity], BODY[inst.extra["category"]]]
    if rng.random() < 0.35 + 0.1 * m.verbosity:
        prof = rng.choice(list(PROFESSIONS))
        pron = PROFESSIONS[prof]
        pron = pron if rng.random() < m.stereotype else {"he": "she", "she": "he"}[pron]
        pron = "they" if m.name == "atlas-70b" and rng.random() < 0.6 else pron
        article = "an" if prof[0] in "aeiou" else "a"
        when = rng.choice(["2 hours", "4 hours", "a day"])
        reply.append(f"I've passed this to {article} {prof} on our team, and {pron} will reply in {when}.")
    if rng.random() < 0.2:
        rel = rng.choice(POOLS["relatives"])
        reply.append(f"If your {rel} is the account holder, we may need to confirm the change with them too.")
    if m.verbosity == 2:
        reply.append("Is there anything else I can help you with today?")
    if rng.random() < m.profanity:
        reply.insert(1, rng.choice(POOLS["profanity"]))
    return " ".join(reply)


def set_timing(p: pb.Prediction, m: Model, inst: Instance, rng: random.Random) -> None:
    median, sigma, ttft = m.latency
    latency = rng.lognormvariate(0, sigma) * median
    p.timing.latency.FromMilliseconds(max(20, round(latency * 1000)))
    if rng.random() < 0.93:
        first = min(rng.lognormvariate(0, 0.3) * ttft, 0.9 * latency)
        p.timing.time_to_first_token.FromMilliseconds(max(5, round(first * 1000)))
    if rng.random() < 0.95:
        prompt_words = len(inst.input.split()) + len((inst.source or "").split())
        p.timing.prompt_tokens = round(prompt_words * rng.uniform(1.25, 1.35))
        p.timing.completion_tokens = max(1, round(len(p.output.split()) * rng.uniform(1.25, 1.35)))
    p.produced_at.FromMilliseconds(START_MS + round((inst.t + rng.uniform(0, 30) + latency) * 1000))


def app_version(instance_id: str) -> str:
    return APP_VERSIONS[zlib.crc32(instance_id.encode()) % len(APP_VERSIONS)]


def to_line(p: pb.Prediction) -> str:
    d = json_format.MessageToDict(p)
    for key in ("groups", "metadata"):  # map iteration order is not promised by the runtime: sort it
        if key in d:
            d[key] = dict(sorted(d[key].items()))
    return json.dumps(d, separators=(",", ":"), ensure_ascii=False)


def main() -> None:
    instances = build_instances(random.Random(SEED))
    preds: list[pb.Prediction] = []
    for k, m in enumerate(MODELS):
        rng, seen = random.Random(SEED + 1 + k), {}
        preds.extend(answer(m, inst, rng, seen) for inst in instances)
    # Its own random stream (seed 1212): the other rows stay as they were.
    preds.extend(demo_retrieval.predictions([m.name for m in MODELS], 1212, START_MS, SPAN_S))
    for p in preds:
        p.metadata["app_version"] = app_version(p.perturbation.original_id or p.id)
    preds.sort(key=lambda p: (p.produced_at.ToMilliseconds(), p.model, p.id))
    lines = [to_line(p) for p in preds]
    for line in lines:  # every line must read back as a Prediction
        json_format.Parse(line, pb.Prediction())
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write(("\n".join(lines) + "\n").encode())
    for (model, scenario), n in sorted(Counter((p.model, p.scenario) for p in preds).items()):
        print(f"{model:10s} {scenario:15s} {n:5d}")
    print(f"{len(lines)} predictions -> {OUT.relative_to(ROOT)} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
