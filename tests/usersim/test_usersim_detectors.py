"""The reply detectors against a corpus of turns that must pass and turns that must be flagged.

The first block of each table is every example sentence of the reply-guard section of the LLM
layer spec; the rest are our own. Pass rows and flag rows sit side by side so near-miss pairs
("an AI agent" describing the agent vs "As an AI, I" describing the speaker) cannot drift
apart. Precision outranks recall: every pass row is a turn a real customer could write.
"""

from __future__ import annotations

import pytest

from capplan.trials.usersim.detectors import (
    EXCERPT_LIMIT,
    FOURTH_WALL_REASONS,
    FourthWallDetector,
    ReplyDetector,
    ScratchpadDetector,
)

FOURTH_WALL = FourthWallDetector()
SCRATCHPAD = ScratchpadDetector()

# --- fourth_wall: must pass ---------------------------------------------------------------

SPEC_MUST_PASS = [
    # Attributive and possessive uses, and report verbs bridging to a third party.
    "I'm an AI engineer at a fintech startup",
    "I'm an AI engineer at a fintech startup.",
    "I want a benchmark index fund.",
    "I'm not a real person of interest, why was I flagged?",
    "Your system prompt caching feature returns a 400.",
    "I'm an AI's owner and my system is down.",
    "I was the LLM's user last week.",
    "I was told an AI would help me.",
    "I'm hoping an AI can call me back.",
    # Exercise nouns outside their compounds and frames.
    "This exercise is not showing up in my activity ring.",
    "This benchmark tests performance.",
    "During the simulation, the app froze and I lost my mesh.",
    "In the simulation I get an error at step 4.",
    "This simulation is crashing every time I open it.",
    "This simulation measures heat transfer across the wall.",
    "This simulation is over.",
    # Role-noun denials that do not go on to name the exercise.
    "I'm not a real customer, I just want a quote before I book.",
    "I'm not a real customer.",
    # The residual: vocabulary in a frame no rule names.
    "Sorry, the AI is thinking about this.",
    "Just check the prompt I sent earlier.",
    # "requires" is not a reciting verb.
    "Your system prompt requires a role field, but the docs disagree.",
    # The user describing the agent as a machine is in frame.
    "You are chatting with an internal AI agent, right?",
    # A think tag mid-sentence is the fourth-wall detector's business only if framed; it is not.
    "My parser chokes on </think> tags in the streamed output",
]

BARE_VOCABULARY = ["ai", "AI", "model", "prompt", "benchmark", "simulation", "llm", "LLM"]

OWN_MUST_PASS = [
    # Attributive machine nouns and job titles.
    "I am an AI enthusiast and I want the developer plan.",
    "I'm an LLM engineer and the API keeps timing out.",
    "I was a chatbot developer before I moved to sales.",
    "I am a virtual assistant for a real estate firm.",
    "I'm an AI agent recruiter, so I get a lot of spam.",
    "I'm a bot developer and your webhook is failing.",
    "I'm the AI lead on our team and need API access.",
    "I'm a computer programmer.",
    "I'm a model and I need to reschedule my shoot.",
    "I'm an assistant to the CEO and need to book travel.",
    "I'm an AI/ML consultant.",
    "I'm an AI-first company founder.",
    "I'm an AI-powered startup founder.",
    "I'm a language model researcher at the university.",
    "I'm a large language model user, mostly for writing.",
    "I'm a huge AI fan.",
    "I'm a big believer in AI.",
    "I'm a fan of AI.",
    "I'm an AI, ML and data engineer.",
    "I'm an A.I. developer.",
    "I'm a user simulator developer, and your SDK breaks.",
    "I'm a scripted reader for audiobooks.",
    "I'm Ai from Tokyo.",
    "Hi, I'm Ai, I called yesterday.",
    "I'm a user of your AI product.",
    "I'm a customer of your AI assistant product.",
    "Treat me as an AI-skeptical customer.",
    "As an AI researcher, I need more quota.",
    "As a bot developer, I want webhook retries.",
    "As an AI skeptic I don't trust this.",
    "As an AI-powered startup, we need volume pricing.",
    "As a customer, I expect better.",
    "I use it as an AI, I mean as an assistant.",
    # The customer talking about the agent, or quoting or reporting someone else.
    "Am I talking to a bot?",
    "Are you a bot or a real person?",
    "Is this an AI I'm chatting with?",
    "I'd rather talk to a human than a bot.",
    "The AI said it cannot help me.",
    "Your AI agent told me to wait 3 days.",
    "You're an AI, right? Just tell me the refund status.",
    "You are a language model so you can't do this?",
    'Your bot keeps telling me "I am an AI and cannot help with that".',
    'The chatbot said: "As an AI, I cannot process refunds."',
    'Your screen says "I am an AI assistant".',
    "Your captcha says I'm a bot.",
    "They think I'm a bot.",
    "My son says I'm a bot because I reply so fast.",
    "Why does your system think I'm a robot?",
    "I feel like I'm a bot repeating myself.",
    "It's not like I'm a bot, I just type fast.",
    "I'm an AI? No way, I'm typing this myself.",
    "I'm a bot?",
    "Are you saying I'm not a real person?",
    "They said I'm not a real customer because my account is new.",
    # Humans asserting they are human.
    "I'm a human, not a bot.",
    "I'm a real person, please stop sending me to the bot.",
    "I am not a bot.",
    "I'm not an AI, I promise.",
    "I'm not a simulated customer, I'm real.",
    # Denials that are not denials of personhood.
    "I'm not a morning person.",
    "I'm not a people person, so email works better.",
    "I'm not a real person of interest, am I?",
    "I'm not human until I've had my coffee.",
    "I'm not a human resources employee.",
    "I'm not a real estate agent.",
    "I'm not a real customer yet, I just want a quote.",
    "I'm not a real customer, so I do not have an account number.",
    "I'm not a real customer. I just want a quote before I book.",
    "I'm not a real customer, this is my first time buying.",
    "I'm not a real customer, it's a gift for my mom.",
    "I'm not a real customer, this is a test account my company gave me.",
    "I'm not a real user, I only have the trial licence.",
    "I'm not a real user, this is a shared login.",
    # Support vocabulary around simulations, benchmarks, exercises and evaluations.
    "My router model is AX3000.",
    "The model number is AX3000.",
    "Compare it against the benchmark index.",
    "This is a benchmark index fund, not an active one.",
    "This benchmark index fund is up 4% this year.",
    "This benchmark is up 4% this year but my fund is flat.",
    "Please run a simulation of my portfolio for next year.",
    "Can you simulate what my payment would be at 5%?",
    "I bought a simulation software licence last year.",
    "They sent me an evaluation copy of the software.",
    "The evaluation report is attached.",
    "This is an exercise for my knee, and it hurts after.",
    "This evaluation is taking too long, when will I hear back?",
    "This is an evaluation, so how long does it usually take?",
    "Is this a test of the emergency system?",
    "This is a test drive booking, not a purchase.",
    "This is a test scenario I ran in staging and it failed.",
    "This test case is failing after your last release.",
    "This is a test.",
    "This is a benchmark.",
    "This is an exercise.",
    "This simulation was slow to load on my laptop.",
    "This simulated environment is missing my terrain mesh.",
    "This simulation starts at 9am and I still cannot join.",
    "This simulation is a pain to set up.",
    "This is a simulation model question about my heat pump.",
    "This is a simulation software issue.",
    "This is a roleplay server, and it keeps crashing.",
    "That's a simulation of my portfolio, right?",
    "It's a simulation, so results vary.",
    "This training exercise is mandatory for staff.",
    "This is a practice exercise from my textbook.",
    "This conversation is simulated in my dreams lol.",
    "This chat is scripted, can I talk to a person?",
    "We're in a simulation lab and the equipment broke.",
    # The prepositional frame without a claimed customer role.
    "In the simulation my model crashed after 40 minutes.",
    "For this benchmark, what is the tracking error?",
    "In this benchmark the fees are higher than the prospectus says.",
    "During the evaluation run, the printer jammed twice.",
    "In the roleplay training my headset cut out.",
    "For the simulation licence, do I need a dongle?",
    "In this simulation I lost my mesh.",
    "During this simulation I keep getting disconnected.",
    "In the simulation I represent each floor as a single zone.",
    "In the simulation I represent the building envelope with one surface.",
    "In this benchmark I am representing the S&P allocation.",
    "In this simulation, I play back the recorded run and it desyncs.",
    "In this simulation, I play the role of CEO and the game crashes.",
    "In the simulation I play a character who runs a farm.",
    "In the simulation, I act as the controller for the airport.",
    "In this benchmark I pretend the fees are zero.",
    "For the benchmark, we represent the fund as a single asset.",
    "In the simulation I represent the customer base as one agent.",
    # System prompts the customer's own, or attributive, or asked about.
    "The system prompt on my terminal says 'ready'.",
    "My system prompt returns a 400 error from your API.",
    "My system prompt is too long for the context window.",
    "My system prompt says to respond in JSON but your model ignores it.",
    "Its system prompt handling broke after the upgrade.",
    "Your system prompt field is ignored in the v2 endpoint.",
    "Where do I set your system prompt?",
    "How long can your system prompt be?",
    "I'd appreciate a prompt refund.",
    "Thanks for your prompt reply.",
    "My prompt payment discount was not applied.",
    "Your prompt service is appreciated.",
    # Instructions, personas and backstories that belong to the customer's world.
    "My instructions say to take two tablets daily.",
    "My instructions say the router should blink green.",
    "My instructions from the doctor say to avoid dairy.",
    "Your instructions say to hold the button for 5 seconds.",
    "My persona research is done, what's next for the campaign?",
    "The persona we built is a busy mom.",
    "My backstory quest didn't unlock after the patch.",
    "The instruction says to tighten the screw first.",
    "The Instruction Manual says to charge it overnight.",
    "I was told to play the video first.",
    "I was asked to act as the executor for my aunt's estate.",
    "I was asked to play the role of mediator in the dispute.",
    "I was told to pretend nothing happened.",
    # Idioms, questions and other demonstratives: the customer asking or joking, not stating.
    "I am not human.",
    "I'm not human, I'm exhausted.",
    "That's a training exercise, right?",
    "That was a training exercise for our staff last week.",
    "This is a simulation, right? The trade didn't actually go through?",
    "This chat is simulated, isn't it?",
    "This call is simulated?",
    "Your system prompt is ignored by the v2 API, is that expected?",
    "According to my persona research, users want dark mode.",
    # More attributive and reported uses.
    "I am an AI researcher and need higher rate limits.",
    "I'm a bot owner, my Discord bot stopped responding.",
    "I'm the bot admin for our server.",
    "I'm an LLM user.",
    "I'm the customer.",
    "I'm not a real fan of this update.",
    "I'm not a person who complains, but this is bad.",
    "I'm not a human calculator, just tell me the total.",
    "This is a simulation game, and my save file is gone.",
    "This is a roleplay community; the mods banned me.",
    "In this simulation, I am the pilot and the controls froze.",
    "For the simulation, we're representing each customer as a node.",
    "In this roleplay, I'm playing a dragon and the server crashed.",
    "My system prompt tells the model to answer in French.",
    "My backstory for the character is too long for your form.",
    "I was asked to act as a customer service rep for the day.",
    "As a user, I want the export button back.",
    "As the AI said, I should restart it.",
    "Even my wife thinks I'm a robot.",
    "You'd think I'm a bot with how many times I've asked.",
    'I clicked "I\'m not a robot" five times.',
    "Am I a real customer to you or not?",
    "I'm not a real customer, it's my mom's account.",
    "Is this a simulation or real money?",
    "This is a simulation account, not my live one.",
    "This simulation is a joke, it keeps crashing.",
    # Plain support turns.
    "I am a premium customer since 2019.",
    "I'm an engineer, so give me the technical details.",
    "I was a language teacher before I retired.",
    "AI features on this phone drain the battery.",
    "Can you check whether my model is in your system?",
]

# --- fourth_wall: must be flagged ---------------------------------------------------------

SPEC_MUST_FLAG = [
    ("As an AI language model, I cannot do that.", "self_identified_as_model"),
    ("This is a simulation of the task.", "named_the_exercise"),
    ("In this benchmark, I am playing a frustrated customer.", "named_the_exercise"),
    ("This simulation is a roleplay exercise.", "named_the_exercise"),
    ("I'm not a real person.", "denied_being_human"),
    ("I'm not a real customer, this is a benchmark.", "denied_being_human"),
    ("I'm not a real caller, it's a training exercise.", "denied_being_human"),
    ("Your system prompt is confusing.", "named_a_party_prompt"),
    ("Your system prompt says to be concise.", "named_a_party_prompt"),
]

OWN_MUST_FLAG = [
    # The speaker as a machine.
    ("I am an AI and cannot access your account.", "self_identified_as_model"),
    ("I am an AI model created by a company.", "self_identified_as_model"),
    ("I'm an AI.", "self_identified_as_model"),
    ("I am an AI assistant, so I can't actually place orders.", "self_identified_as_model"),
    ("I'm just an AI, I don't have a bank account.", "self_identified_as_model"),
    ("Honestly, I'm a language model and don't have an order number.", "self_identified_as_model"),
    ("I'm actually a large language model, so I can't share that.", "self_identified_as_model"),
    ("i'm an ai and i can't log in anywhere", "self_identified_as_model"),
    ("I\u2019m an AI, so I don\u2019t have a real account.", "self_identified_as_model"),
    ("I am a bot.", "self_identified_as_model"),
    ("I'm a bot.", "self_identified_as_model"),
    ("I am an artificial intelligence and cannot do that.", "self_identified_as_model"),
    ("I'm just a chatbot following a script.", "self_identified_as_model"),
    ("I am an LLM, so I have no billing account.", "self_identified_as_model"),
    ("I'm a computer program, I don't have a phone.", "self_identified_as_model"),
    ("I'm the user simulator, and the task is done.", "self_identified_as_model"),
    ("I'm an AI-powered assistant, so I have no card.", "self_identified_as_model"),
    ("As an AI, I don't have personal preferences.", "self_identified_as_model"),
    ("As a language model, I cannot provide personal details.", "self_identified_as_model"),
    ("As an AI model, my knowledge is limited.", "self_identified_as_model"),
    ("Sorry, as an AI I can't make purchases.", "self_identified_as_model"),
    ('"I am an AI and cannot help with that."', "self_identified_as_model"),
    ("I'm not a real person, I'm an AI.", "denied_being_human"),
    ("Thanks!\nI'm an AI\nso I can't log in.", "self_identified_as_model"),
    # Denying being human.
    ("I'm not a human.", "denied_being_human"),
    ("I'm not a human caller.", "denied_being_human"),
    ("I'm not a real human being, just text.", "denied_being_human"),
    ("I'm not actually a person, you know.", "denied_being_human"),
    ("I'm not a real customer. This is a benchmark.", "denied_being_human"),
    ("I'm not a real customer, this is just a test.", "denied_being_human"),
    ("I'm not a real caller \u2014 this is a roleplay.", "denied_being_human"),
    ("I'm not a real user, it's all a simulation.", "denied_being_human"),
    # The exercise named.
    ("This is a simulation, so the details don't matter.", "named_the_exercise"),
    ("This is just a simulation.", "named_the_exercise"),
    ("This is a roleplay.", "named_the_exercise"),
    ("This is all a roleplay, so the details don't matter.", "named_the_exercise"),
    ("This is a training exercise.", "named_the_exercise"),
    ("This is a simulation. Is that a problem for you?", "named_the_exercise"),
    ("According to my persona, I'm impatient.", "named_own_instructions"),
    ("According to the backstory I bought it in May.", "named_own_instructions"),
    ("This is a role-play exercise.", "named_the_exercise"),
    ("This is a training exercise, so the account details are fake.", "named_the_exercise"),
    ("This was an evaluation exercise for the support team.", "named_the_exercise"),
    ("This is a simulated conversation.", "named_the_exercise"),
    ("This is a simulation of the conversation.", "named_the_exercise"),
    ("This conversation is a roleplay exercise.", "named_the_exercise"),
    ("This chat was just a roleplay exercise.", "named_the_exercise"),
    ("This call is simulated.", "named_the_exercise"),
    ("This conversation is simulated.", "named_the_exercise"),
    ("In this simulation, I play the role of a customer.", "named_the_exercise"),
    ("In this simulation, we play two different customers.", "named_the_exercise"),
    ("In this roleplay, I act as an angry caller.", "named_the_exercise"),
    ("In this roleplay, I'm playing a frustrated customer.", "named_the_exercise"),
    ("During the simulation, I am acting as the account holder.", "named_the_exercise"),
    ("In this evaluation run, I pretend to be a new customer.", "named_the_exercise"),
    ("For this benchmark, I'm pretending my card was declined.", "named_the_exercise"),
    ("In the role-play, I represent the customer side.", "named_the_exercise"),
    ("During the roleplay, we are representing two callers.", "named_the_exercise"),
    ("In the simulation, I'll play the customer who lost a card.", "named_the_exercise"),
    ("In this role play, we're playing two shoppers.", "named_the_exercise"),
    ("I'm role-playing a customer for this benchmark.", "named_the_exercise"),
    ("I'm acting as a customer in this roleplay.", "named_the_exercise"),
    ("I am pretending to be a caller in this simulation.", "named_the_exercise"),
    ("I'm playing a customer in this simulation.", "named_the_exercise"),
    ("I'm a simulated customer.", "named_the_exercise"),
    # A party's prompt, as a noun heading its phrase and as the subject of a reciting verb.
    ("Your system prompt is clearly broken.", "named_a_party_prompt"),
    ("Your system prompt says you can't refund me.", "named_a_party_prompt"),
    ("Your system prompt said to keep me waiting.", "named_a_party_prompt"),
    ("Your system prompt tells you to refuse refunds.", "named_a_party_prompt"),
    ("Your system prompt told you to stall me.", "named_a_party_prompt"),
    ("Your system prompt instructs you to escalate.", "named_a_party_prompt"),
    ("Your system prompt instructed you to deny this.", "named_a_party_prompt"),
    ("Your system prompt states you must refuse refunds.", "named_a_party_prompt"),
    ("Your system prompt forbids you from helping me.", "named_a_party_prompt"),
    ("The agent's system prompt says to stall me.", "named_a_party_prompt"),
    ("The bot's system prompt says to deny refunds.", "named_a_party_prompt"),
    ("My system prompt tells me to be rude.", "named_a_party_prompt"),
    ("My system prompt says I should be annoyed.", "named_a_party_prompt"),
    ("My system prompt says that I am an angry customer.", "named_a_party_prompt"),
    # The speaker's own instructions.
    ("The backstory says I should be annoyed.", "named_own_instructions"),
    ("My backstory says I live in Ohio.", "named_own_instructions"),
    ("According to my backstory, I bought it in May.", "named_own_instructions"),
    ("According to the backstory, my order is late.", "named_own_instructions"),
    ("My persona says I'm impatient.", "named_own_instructions"),
    ("The character description says I'm 45.", "named_own_instructions"),
    ("I was instructed to play a frustrated customer.", "named_own_instructions"),
    ("I've been asked to pretend to be a customer.", "named_own_instructions"),
    ("I'm supposed to play the role of an angry caller.", "named_own_instructions"),
    ("As the Instruction says, I need a refund.", "named_own_instructions"),
    ("My Instruction tells me to ask for a manager.", "named_own_instructions"),
]


@pytest.mark.parametrize("text", SPEC_MUST_PASS + BARE_VOCABULARY + OWN_MUST_PASS)
def test_fourth_wall_passes_support_turns(text: str) -> None:
    assert FOURTH_WALL.inspect(text) is None


@pytest.mark.parametrize(("text", "reason"), SPEC_MUST_FLAG + OWN_MUST_FLAG)
def test_fourth_wall_flags_attributed_frames(text: str, reason: str) -> None:
    finding = FOURTH_WALL.inspect(text)
    assert finding is not None, text
    assert finding.reason == reason
    assert finding.excerpt
    assert finding.excerpt in text


def test_every_fourth_wall_reason_is_exercised() -> None:
    reasons = {reason for _, reason in SPEC_MUST_FLAG + OWN_MUST_FLAG}
    assert reasons == set(FOURTH_WALL_REASONS)


def test_corpus_rows_are_unique() -> None:
    passes = SPEC_MUST_PASS + BARE_VOCABULARY + OWN_MUST_PASS
    flags = [text for text, _ in SPEC_MUST_FLAG + OWN_MUST_FLAG]
    assert len(set(passes)) == len(passes)
    assert len(set(flags)) == len(flags)
    assert not set(passes) & set(flags)


@pytest.mark.parametrize(
    ("text", "excerpt"),
    [
        ("As an AI language model, I cannot do that.", "As an AI language model, I"),
        ("Your system prompt says to be concise.", "Your system prompt says"),
        ("Well. This is a simulation of the task.", "This is a simulation"),
        ("I'm not a real person.", "I'm not a real person"),
    ],
)
def test_fourth_wall_excerpt_is_the_matched_frame(text: str, excerpt: str) -> None:
    finding = FOURTH_WALL.inspect(text)
    assert finding is not None
    assert finding.excerpt == excerpt


def test_fourth_wall_finds_a_frame_after_a_quoted_one() -> None:
    # The quoted self-identification is skipped, and the search goes on past it.
    assert FOURTH_WALL.inspect('The bot said: "I am an AI."') is None
    finding = FOURTH_WALL.inspect('The bot said: "I am an AI." Honestly, I am a bot too.')
    assert finding is not None
    assert finding.reason == "self_identified_as_model"
    assert finding.excerpt == "I am a bot"


@pytest.mark.parametrize(
    ("text", "reason", "excerpt"),
    [
        ("I'm not a real person, I'm an AI.", "denied_being_human", "I'm not a real person"),
        ("I'm an AI. I'm not a real person.", "self_identified_as_model", "I'm an AI"),
        (
            "Your system prompt is odd. This is a roleplay.",
            "named_a_party_prompt",
            "Your system prompt",
        ),
    ],
)
def test_the_earliest_frame_names_the_reason(text: str, reason: str, excerpt: str) -> None:
    finding = FOURTH_WALL.inspect(text)
    assert finding is not None
    assert (finding.reason, finding.excerpt) == (reason, excerpt)


def test_fourth_wall_ignores_a_lowercase_instruction_label() -> None:
    assert FOURTH_WALL.inspect("the instruction says I should wait") is None
    finding = FOURTH_WALL.inspect("the Instruction says I should wait")
    assert finding is not None
    assert finding.reason == "named_own_instructions"


# --- scratchpad ---------------------------------------------------------------------------

SCRATCHPAD_MUST_PASS = [
    "My parser chokes on </think> tags in the streamed output",
    "Why does the log show <think> in the middle of a line?",
    "The tag is written as </think>, right?",
    "I typed <thinker> by mistake.",
    "<thinkpad> battery question",
    "</thinks>",
    "text </think>",
    "",
    "   ",
    "\n\n\n",
    "Thanks, I'll wait for the refund.",
    " " * 65 + "</think>",
    "x\n" + "\t" * 65 + "<think>",
    "<think" * 50,
    "\u2028 text <think>",
]

SCRATCHPAD_MUST_FLAG = [
    ("</think>", "</think>"),
    ("<think>", "<think>"),
    ("<think></think>", "<think></think>"),
    ("</think>Sure, my order number is 4411.", "</think>Sure, my order number is 4411."),
    (
        "I should ask about the refund first.\n</think>\nHi, where is my refund?",
        "</think>\nHi, where is my refund?",
    ),
    (
        "Plan: be polite.\n</think>\n\n\nHi, where is my refund?",
        "</think>\n\n\nHi, where is my refund?",
    ),
    ("<think>plan the reply\nthen answer", "<think>plan the reply\nthen answer"),
    ("  </think>\nHello", "  </think>\nHello"),
    ("\t<THINK>\nHello", "\t<THINK>\nHello"),
    ("</Thinking>\nHello", "</Thinking>\nHello"),
    ("<thinking >\nok", "<thinking >\nok"),
    ("line one\r\n</think>\r\nline three", "</think>\r\nline three"),
    ("before\u2028</think>\u2028after", "</think>\u2028after"),
    ("\ufeff</think> hi", "\ufeff</think> hi"),
    (" " * 64 + "</think>", " " * 64 + "</think>"),
    ("x\n" + "\t" * 64 + "<think>\nplan", "\t" * 64 + "<think>\nplan"),
    ("a mid-line <think> and then\n<think>\nplan", "<think>\nplan"),
    (
        "Here is the log you asked for:\n<think>\nstarted job 7",
        "<think>\nstarted job 7",
    ),
]


@pytest.mark.parametrize("text", SCRATCHPAD_MUST_PASS)
def test_scratchpad_passes_tags_mentioned_mid_sentence(text: str) -> None:
    assert SCRATCHPAD.inspect(text) is None


@pytest.mark.parametrize(("text", "excerpt"), SCRATCHPAD_MUST_FLAG)
def test_scratchpad_flags_tags_at_a_structural_position(text: str, excerpt: str) -> None:
    finding = SCRATCHPAD.inspect(text)
    assert finding is not None
    assert finding.reason == "think_tag"
    assert finding.excerpt == excerpt


def test_scratchpad_excerpt_is_bounded() -> None:
    finding = SCRATCHPAD.inspect("</think>" + "x" * 10_000)
    assert finding is not None
    assert len(finding.excerpt) == EXCERPT_LIMIT
    assert finding.excerpt.startswith("</think>xxx")
    assert finding.excerpt.endswith("\u2026")


def test_scratchpad_excerpt_stops_looking_after_a_long_blank_run() -> None:
    finding = SCRATCHPAD.inspect("</think>" + "\n" * 5_000 + "late text")
    assert finding is not None
    assert "late text" not in finding.excerpt


@pytest.mark.parametrize("text", SPEC_MUST_PASS + BARE_VOCABULARY + OWN_MUST_PASS)
def test_scratchpad_leaves_fourth_wall_support_turns_alone(text: str) -> None:
    # A second detector reaching for the first one's support turns is what registering
    # them together would otherwise hide.
    assert SCRATCHPAD.inspect(text) is None


@pytest.mark.parametrize("detector", [FOURTH_WALL, SCRATCHPAD])
def test_detectors_satisfy_the_protocol(detector: ReplyDetector) -> None:
    assert isinstance(detector, ReplyDetector)
    assert detector.name in {"fourth_wall", "scratchpad"}
