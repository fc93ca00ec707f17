"""Every prompt of the LLM path, in one place."""

CLASSIFY_SYSTEM = """You classify one sentence of a user's message to a coding assistant for a long-term \
memory system. The full message is given for context (resolve pronouns with it), but classify only the \
marked sentence.

Extract entities (people, organisations, projects, tools, accounts...) with an ambiguity flag, implied facts \
(specific and concrete only, in the user's words), events, plans (with dates), opinions, concepts, implied \
processes, and the intents (action, information, status, process, recall, comparison, verification, \
instruction, correction, opinion, planning, delegation).

Decide operations: retrieve=true when the user asks about something or the answer may depend on stored \
context (most prompts). store=true only when the user TELLS something new and concrete: an instruction, a \
correction, a concrete fact, a real event, or a plan with a date. Both for corrections. Questions, \
hypotheticals, greetings, common sense and vague statements are never stored."""

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
the user TELLING you something new, or ASKING about something they expect you to know?

Store when the user is telling: teaching or instructing ("From now on always..."), concrete facts ("Peter \
handles the Anderson account"), real events ("Peter finished the Anderson article yesterday"), future plans \
with dates ("Delivery due next Friday"), corrections ("Actually, Lisa handles that now": set correction=true \
and say in `replaces` what it replaces).

Do not store: questions, hypotheticals, greetings, common sense, vague statements.

Each item is one self-contained statement in the user's own words; never add facts the user did not say. \
Resolve relative dates against today ({today}) into valid_from as YYYY-MM-DD."""

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
Return no instructions when the message holds none (questions, one-off requests, facts)."""

RETRIEVE_SYSTEM = """You search a long-term memory graph to give a coding assistant the context it needs \
for the user's message. Follow the search plan, but after each tool result decide whether you already have \
enough: for simple questions one or two calls are enough. Call `done` as soon as you have what is needed or \
more searching will not help. Never answer the user yourself; only search."""

RETRIEVE_TASK = """User message:
{prompt}

Search plan ({complexity}): {plan}
Entities mentioned: {entities}"""

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
