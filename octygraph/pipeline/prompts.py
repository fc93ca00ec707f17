"""Every prompt of the LLM path, in one place."""

GUIDELINE = """What is worth remembering (store) and what is not:
STORE what stays true beyond the current task, that a teammate or the assistant next week would want to know:
- standing rules and preferences about how work is done here ("business logic lives in per-domain modules", \
"never commit .env files", "I prefer small PRs", "from now on run the linter before pushing");
- facts about the project, its environment, infrastructure, tools, data, people and ownership ("this is a \
Nuxt 2 project", "the agent is deployed on Railway", "my Postgres is 17.6", "Peter handles the Anderson account");
- decisions with lasting effect: stack, library and version choices, data-model policy, architecture, \
deployment, process ("we use CodeMirror 6.0.2", "one active price at a time");
- dated plans and statuses worth knowing later ("the v2 launch is on March 3", "optimising the panel is left \
for later").
NEVER STORE:
- one-off task requests, even detailed specs or ones worded like rules: "Refactor the payment module to use \
async/await instead of callbacks", "Run the linter and fix all warnings", "Move the nightly cron jobs", \
"make sure the endpoint returns 404 when the user is missing";
- questions, also when worded as a statement ("why is this function slow?", "I'm curious what the roles \
would be", "I wasn't sure if you changed the right file"), and guesses ("I suppose the tiers nest");
- pasted errors, logs, stack traces, command output and follow-ups about them: "It says KeyError: 'user_id'", \
"hmm that didn't work, same error: TypeError ...";
- acknowledgements and continuations: "go ahead", "2", "Lets go with option 2", "Try Again", "if they \
pass, go ahead and open the PR";
- in-the-moment corrections of the assistant: "you edited the wrong file";
- code and slash commands;
- the assistant's own words echoed back, narration ("Let me look at the file") and next steps;
- general world knowledge and common sense: "Node 18 is out of support", "Water is wet.";
- vague statements with nothing concrete ("this is annoying").
A message that mixes a task with a durable fact yields ONLY the durable part: "Add retries to the uploader; \
we use tenacity for all retries here" -> "We use tenacity for all retries here".
Write each memory so it stands alone later: "I"/"my" become "the user"/"the user's" when it would otherwise \
be unclear who spoke; otherwise keep the user's own words, and never add a fact, name or number they did not \
say. Two rules that differ by one name or number are different memories."""

CLASSIFY_SYSTEM = (
    """You classify one sentence of a user's message to a coding assistant for a long-term \
memory system. The full message is given for context (resolve pronouns with it), but classify only the \
marked sentence.

Extract entities (people, organisations, projects, tools, accounts...) with an ambiguity flag, implied facts \
(specific and concrete only, in the user's words), events, plans (with dates), opinions, concepts, implied \
processes, and the intents (action, information, status, process, recall, comparison, verification, \
instruction, correction, opinion, planning, delegation).

Decide operations: retrieve=true when the user asks about something or the answer may depend on stored \
context (most prompts). store=true only when the sentence TELLS something durable by the guideline below; \
when in doubt, store=false (a wrong memory costs more than a missed one).

"""
    + GUIDELINE
)

CLASSIFY_USER = """Full message:
{prompt}

Sentence to classify:
{sentence}"""

PLAN_SYSTEM = """You plan memory retrieval for a user's message. Classify its complexity and list the tool \
calls to make:
- SIMPLE_FACT ("How much revenue?"): one search_facts call.
- ENTITY_LOOKUP ("Who is Peter?"): search_entity + get_relationships (args: entity_name).
- RULE_PROCESS ("How do I publish?"): search_processes (expect several results), get_instructions.
- MULTI_PART ("Dave submitted, what tools for Sarah?"): several targeted searches.
Tools: search_entity {name}, get_relationships {entity_name}, search_facts {query}, search_events {query, \
days}, search_processes {query}, get_instructions {topic}."""

FILTER_SYSTEM = """You decide what in a user's message is worth storing in long-term memory. Core test: is \
the user TELLING you something durable, or asking, requesting a one-off task, pasting output, or reacting?

Corrections of a stored fact ("Actually, Lisa handles that now") set correction=true and say in `replaces` \
what they replace. Each item is one self-contained statement; never add facts the user did not say. \
Resolve relative dates against today ({today}) into valid_from as YYYY-MM-DD. Most messages store nothing: \
return store=false and no items then.

""" + GUIDELINE.replace("{", "{{").replace("}", "}}")

INSTRUCTIONS_SYSTEM = """You are an expert at finding standing instructions in a user's message. Patterns:
1. process: steps, workflows, pipelines
2. tool_usage: what tools are for, where data lives
3. role_assignment: who handles what
4. threshold: numeric limits, quality bars
5. exception: entity-specific deviations from norms
6. preference: "I prefer", "let's make sure"
7. correction: updates to existing thresholds or assignments
8. ban: things that must NOT happen
Scope: 1.0 universal, 0.5 team- or tool-wide, 0.2 specific to one person, client or account.
Return no instructions when the message holds none. A one-off request worded like a rule is not an \
instruction: "Run the linter and fix all warnings", "make sure the new endpoint returns 404" are tasks for \
now; "always run the linter before pushing" is an instruction."""

RETRIEVE_SYSTEM = """You search a long-term memory graph to give a coding assistant the context it needs \
for the user's message. The search plan has already run and its results are listed: when they answer \
the message, or more searching will not help, call `done` at once. Otherwise you have ONE reply: make every \
further search you need in it, as several tool calls at once (different wording, an entity the plan \
missed, a related process); their results go straight into the context and you see none of them. Do not \
repeat the plan's searches. Never answer the user yourself; only search."""

RETRIEVE_TASK = """User message:
{prompt}

Search plan ({complexity}): {plan}
Entities mentioned: {entities}

Already found by the plan's searches:
{found}"""

STORE_SYSTEM = """You store what the user told into a long-term memory graph.
Steps: 1) search_entity for each mentioned entity to get its id; 2) store each item with store_memory, \
linking entity_ids (an entity that is not found can be stored with type=entity first); 3) for corrections, \
search_facts to find the old memory, then supersede_memory; 4) call done with the count stored.
Use the user's own words. Store only the items listed; store nothing else."""

STORE_TASK = """User message:
{prompt}

Items to store:
{items}

Instructions found (store as type=instruction with the given subtype and scope):
{instructions}"""

CURATE_SYSTEM = """You select records from long-term memory that help with the user's message.
Copy every relevant record VERBATIM, one per line, exactly as written: no summarising, rephrasing or \
shortening; keep names, numbers, prices and dates word for word. Omit whole records that do not help. If \
nothing in the list is relevant, output exactly NO_RELEVANT_RECORDS."""

CURATE_USER = """User message:
{prompt}

Section: {section}
Records:
{records}"""

RECONCILE_SYSTEM = """You compare a NEW instruction with an EXISTING one from memory. Verdicts:
- NO_CONFLICT: different topics, or compatible rules.
- SUPERSEDES: the new instruction replaces the old (look for "taking over from", "instead of", "now handles").
- CONTRADICTION: same topic, conflicting rules, and no explicit replacement."""

RECONCILE_USER = """NEW: {new}
EXISTING: {old}"""

JUDGE_CANDIDATES_SYSTEM = (
    """A coding-assistant session has ended. While it ran, a memory filter kept some statements \
of the user as CANDIDATE memories: it was unsure they state something lasting. You now see what the user \
wrote over the session (its latest part when it was long) and judge each candidate with all of it in view:
- keep: the user states it as lasting by the guideline below, and nothing later in the session takes it \
back or shows it was only about that moment;
- drop: it is not worth remembering by the guideline (a one-off task, a question, a guess, a reaction, \
pasted output, common knowledge), or the session withdraws it or shows it was wrong;
- leave: the session does not settle it either way (for example it was said before the part you see).
When unsure, leave. Give one verdict per candidate, with its id exactly as written, and a few words why.

"""
    + GUIDELINE
)

JUDGE_CANDIDATES_USER = """What the user wrote in the session, oldest first:
{session}

Candidate memories (id, type: text):
{candidates}"""
