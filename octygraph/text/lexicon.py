"""Word lists for the deterministic classifier.

Small, hand-kept sets: English function words, words that look like names when they start a
sentence, common verbs, first names and well-known tools. They are deliberately short; the
database's own entity names (the gazetteer) do most of the entity work once memory has content.
"""

from __future__ import annotations

from typing import Final


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS: Final = _words(
    """
    a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each either else ever few for from further had hadn't has
    hasn't have haven't having he he'd he'll he's her here here's hers herself him himself his
    how how's i i'd i'll i'm i've if in into is isn't it it's its itself just let's may me
    might more most must mustn't my myself neither no nor not now of off on once only or other
    ought our ours ourselves out over own per same shall shan't she she'd she'll she's should
    shouldn't so some such than that that's the their theirs them themselves then there
    there's these they they'd they'll they're they've this those though through thus to too
    under until up upon us very via was wasn't we we'd we'll we're we've were weren't what
    what's when when's where where's whether which while who who's whom whose why why's will
    with won't would wouldn't yet you you'd you'll you're you've your yours yourself
    yourselves also really actually just please ok okay yes yeah hey hi hello thanks
    thank btw fyi etc via lets gonna wanna gotta
    """
)
"""Function words; everything else counts as a content word."""

NOT_NAMES: Final = _words(
    """
    i i'm i'd i'll i've the a an what who whom whose when where why how which what's who's
    actually please from to for of on in at by with and or but so if then than that this these
    those there here it its it's they we you he she my our your their his her hey hi hello
    thanks thank ok okay yes no yeah sure also just btw fyi note remember today tomorrow
    yesterday tonight now then later soon always never every each all some any both
    monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays
    thursdays fridays saturdays sundays weekend weekends january february march april may
    june july august september october november december mon tue tues wed thu thurs fri sat sun
    jan feb mar apr jun jul aug sep sept oct nov dec am pm
    asap eod eow eom eta fyi btw imo imho tbd todo tl;dr tldr ps lol ok np ty thx
    mr mrs ms dr prof sir madam let let's can could would should will shall must might do
    does did is are was were be been am has have had not don't doesn't didn't isn't aren't
    wasn't weren't won't can't couldn't shouldn't wouldn't one two three first second next
    last new old good great nice cool awesome perfect fine sorry oh well so again however
    maybe perhaps anyway also additionally finally quick update correction heads important
    urgent reminder question hmm hm um uh wow yay ugh sounds got ah
    """
)
"""Capitalised words that are never entity names (sentence starters, days, months, fillers)."""

COMMON_VERBS: Final = _words(
    """
    add adjust allow analyse analyze answer apply approve archive ask assign attach avoid back
    bill block book break bring build bump call cancel cc change charge check choose clean
    clear close commit compare compile confirm consider contact continue convert copy count
    create cut debug decide define delete deliver deploy describe design detect document
    double-check download draft drop edit email enable ensure escalate estimate explain export
    file fill find finish fix flag follow forget format forward generate get give go grab
    handle help hide hold implement import include inform install invite invoice keep kill
    label launch leave let link lint list load lock log look loop make manage mark measure
    merge migrate mention message move name note notify open order organize pay pick ping
    plan post prefer prepare print prioritize publish pull push put quote raise read rebase
    rebuild record redeploy refactor refresh reject release remember remind remove rename
    render reorder replace reply report request require reset resolve respond restart restore
    retry return review revert rewrite roll rotate route run save schedule search see send
    set share ship show sign skip sort split start stop store submit summarize summarise
    switch sync tag take talk tell test think track train translate trigger try turn type
    undo unlock update upgrade upload use validate verify wait warn watch write suppose
    imagine assume ignore disregard pretend consider forget
    """
)
"""Base-form verbs: a sentence starting with one is an imperative."""

COMMON_NOUNS: Final = _words(
    """
    revenue sales budget cost costs price pricing deadline everything nothing someone everyone
    anyone nobody production staging prod dev main master team meeting meetings release
    deployment deploy build builds code docs documentation customer customers client clients
    user users management marketing engineering finance legal support design data database
    server servers traffic latency uptime performance security billing payment payments invoice
    invoices contract contracts project projects article articles report reports delivery
    launch migration tests test bug bugs issue issues ticket tickets feature features coverage
    quality process workflow pipeline schedule plan plans roadmap goal goals profit growth
    today tomorrow yesterday tonight morning afternoon evening week month year quarter people
    this that there everybody somebody something anything nothing
    """
)
"""Common nouns that start sentences capitalised ("Revenue grew ...") but name nothing."""

IRREGULAR_PAST: Final = _words(
    """
    was were had did went came sent made wrote took gave met told said found left began broke
    built bought brought caught chose drew drove ate fell felt fought forgot forgave got grew
    heard hid held hit hurt kept knew laid led lent lost meant paid quit ran rang rose saw
    sold shook shut sang sank sat slept slid spoke spent spun stood stole stuck struck swam
    swore taught tore thought threw understood woke won wore wound overtook undertook upheld
    withdrew rebuilt rewrote rode shot showed flew froze
    """
)
"""Irregular simple-past forms (regular ones end in -ed)."""

NOT_PAST_ED: Final = _words(
    """
    need seed feed speed indeed breed proceed succeed exceed embed shed bed red sled wed bleed
    steed weed deed heed reed greed tweed shred bred led fed wed ted ned bed
    """
)
"""Words ending in -ed that are not past tenses."""

FIRST_NAMES: Final = _words(
    """
    aaron adam adrian aisha alan alex alexander alice alicia amanda amber amelia amy ana andrea
    andrew andy angela anna anne anthony arjun ashley ava barbara ben benjamin beth betty bill
    bob brandon brian bruce carl carlos carol caroline catherine charles charlie charlotte chen
    chloe chris christian christine christopher claire daniel david dave deborah dennis diana
    diego dmitri donald donna dorothy ed edward elena eli elizabeth ella emily emma eric erin
    ethan eva evelyn fatima frank gabriel gary george grace greg hannah harry heather helen
    henry hugo ian isaac isabella jack jacob james jamie jane janet jason jean jeff jennifer
    jeremy jessica jim joan joe john jonathan jordan jose joseph josh joshua juan julia julie
    justin karen kate katherine kathy kelly ken kevin kim kyle laura lauren leo liam lily linda
    lisa liz lucas lucy luis luke maria marie mark martha mary matt matthew max maya megan mei
    melissa michael michelle mike mohammed nancy natalie nathan nick nicole noah olivia omar
    oscar pablo pam pat patricia patrick paul paula peter priya rachel raj ray rebecca richard
    rob robert ruth ryan sam samantha samuel sandra sara sarah scott sean sharon sofia sophia
    sophie stephanie stephen steve steven sue susan tanya taylor thomas tim timothy tom tony
    tyler victoria vincent walter wei william yuki zach zoe
    ahmed akira amir ananya anders anil anya astrid camila camille chinedu daan deepa erik farah
    felix francesca giulia hana hassan hiro ibrahim igor ines ingrid ivan jamal johan jonas kenji
    kira kofi kwame lars lena lucia lukas marco mateo mina nadia neha ngozi nico nina oleg olga
    pavel petra pierre pooja quinn ravi rohan rosa sanjay santiago sasha sergio sven tara tobias
    tunde umar valentina vera vikram yara yusuf zainab
    """
)
"""Common first names: a capitalised word in this list is a person."""

TOOLS: Final = _words(
    """
    airflow airtable ansible anthropic asana aws azure bigquery bitbucket circleci claude
    clickup cloudflare confluence datadog dbt discord django docker dockerfile dropbox
    dynamodb elasticsearch excel fastapi figma firebase flask gcp gcs git github gitlab
    grafana hubspot heroku helm jenkins jira jupyter kafka kibana kubernetes k8s langchain
    langgraph mailchimp miro mongodb mysql netlify nginx notion npm openai openrouter pagerduty
    pandas pip pnpm poetry postgres postgresql postman prometheus pypi pytest python quickbooks
    rabbitmq react redis s3 salesforce sentry shopify slack snowflake sqlite stripe supabase
    terraform trello twilio typescript vercel vscode webpack wordpress xero yarn zapier
    zendesk zoom
    """
)
"""Well-known tools and services, matched case-insensitively as tool entities."""

KIND_BY_NEXT_WORD: Final[dict[str, str]] = {
    **dict.fromkeys(
        ("account", "accounts", "client", "clients", "customer", "customers"), "account"
    ),
    **dict.fromkeys(
        (
            "project",
            "projects",
            "repo",
            "repository",
            "app",
            "codebase",
            "initiative",
            "migration",
            "rollout",
            "product",
            "website",
            "site",
            "api",
            "sdk",
            "backend",
            "frontend",
            "service",
        ),
        "project",
    ),
    **dict.fromkeys(
        (
            "team",
            "inc",
            "corp",
            "corporation",
            "ltd",
            "llc",
            "gmbh",
            "company",
            "group",
            "labs",
            "agency",
            "bank",
            "university",
            "department",
            "foundation",
        ),
        "org",
    ),
    **dict.fromkeys(
        (
            "doc",
            "docs",
            "document",
            "spec",
            "report",
            "article",
            "proposal",
            "contract",
            "brief",
            "deck",
            "page",
            "wiki",
            "readme",
            "sheet",
            "spreadsheet",
            "memo",
            "invoice",
            "newsletter",
        ),
        "document",
    ),
    **dict.fromkeys(
        (
            "meeting",
            "call",
            "conference",
            "summit",
            "launch",
            "standup",
            "offsite",
            "sprint",
            "webinar",
            "workshop",
            "kickoff",
        ),
        "event",
    ),
    **dict.fromkeys(("process", "workflow", "pipeline", "procedure", "playbook"), "process"),
    **dict.fromkeys(("folder", "folders", "directory", "dir", "template", "templates"), "document"),
    **dict.fromkeys(("channel", "board", "workspace", "dashboard", "bot", "integration"), "tool"),
    **dict.fromkeys(("office", "city", "street", "building", "hq", "campus"), "place"),
}
"""Kind of a name from the noun that follows it ("the Anderson account" -> account)."""

TOOL_NAME_ENDINGS: Final = _words("drive docs sheets cloud actions code studio cli sdk hub")
"""Last words of multi-word tool names ("Google Drive", "GitHub Actions", "VS Code")."""

GENERIC_SUBJECTS: Final = _words(
    """
    sky sun moon earth world water ocean sea grass fire ice snow rain weather air gravity
    humans human people dogs dog cats cat birds animals plants trees time life money math
    """
)
"""Subjects of common-sense statements ("The sky is blue") that are not worth remembering."""

TIME_WORDS: Final = _words(
    """
    today tomorrow yesterday tonight night morning afternoon evening week weeks month months year
    years day days next last ago now later soon monday tuesday wednesday thursday friday
    saturday sunday weekend always never instead much many often sometimes usually already
    still again ever maybe really quite taking going doing being having getting making
    """
)
"""Time words and adverbs that are never the topic of a prompt."""

PERSON_VERBS: Final = _words(
    """
    said says told tells asked asks thinks thought wants wanted handles handled manages managed
    owns owned leads led joined left works worked reviewed reviews approved approves prefers
    preferred likes liked finished finishes submitted submits sent sends wrote writes called
    calls emailed emails mentioned mentions agreed agrees decided decides promised promises
    knows knew takes took covers covered runs ran reports reported replied replies
    """
)
"""Verbs that, right after a bare name, suggest the name is a person."""

GREETINGS: Final = _words(
    """
    hi hello hey heya yo hiya howdy morning evening afternoon thanks thank thx ty cheers ok okay
    k kk cool great nice awesome perfect sounds good got it bye goodbye see ya later lol yes
    no sure yep yup nope np problem welcome you there claude all much a lot again appreciated
    that this it that's it's makes sense looks sounds seems works worked job work well done
    fine right correct exactly true agreed interesting hmm hm wow so very really
    helped helps helpful useful did the trick
    """
)
"""Words a greeting or acknowledgement is made of ("thanks a lot", "hey there")."""

VAGUE_WORDS: Final = _words(
    """
    stuff things thing something somewhat whatever somehow anything everything
    """
)
"""Words that make a statement too vague to remember when nothing concrete anchors it."""
