"""What may name an entity: names need proof, in documentation and in conversation."""

from __future__ import annotations

import pytest

from pipeline.facts import names
from tests.support.normalized import normalized

DOCS = ["Mem0 stores memories for agents.", "Configure the webhook in the dashboard.",
        "We deploy it with Ollama on a laptop.", "Prepares the prompt before each call.",
        "Database stores vectors.", "Dana Kim leads the rollout.", "Marco signs off for finance."]


def judged(name: str, texts: list[str], speakers: frozenset[str] = frozenset()) -> bool:
    known, common = names.known_names(texts, speakers)
    return names.is_name(name, known, common, speakers)


@pytest.mark.parametrize("name", ["Mem0", "Ollama", "Dana Kim", "Marco", "PostgreSQL", "AWS Bedrock", "Vercel AI SDK",
                                  "GDPR", "Node.js"])
def test_names_in_documentation(name: str) -> None:
    assert judged(name, DOCS + ["We run PostgreSQL and AWS Bedrock.", "It ships the Vercel AI SDK under GDPR."])


@pytest.mark.parametrize("name", [
    "Use", "If you", "Configure", "Prepares", "Database", "Documentation", "Voice Configuration", "NEGATIVE",
    "INPUT FROM TASK", "HIPAA-compliant", "LLM-based", "MB", "Q1", "V3", "POSTGRES_", "--force", "${VAR_NAME}",
    "I'm", "Haven't", "Lately, John", "Required. Mem0 API", "Dr", "Configurable", "Seamlessly", "AI", "LLMs",
    "PR", "SLAs", "UI", "SQL Database", "Customer Support AI Agent", "Node.js 18+", "config.js"])
def test_what_is_no_name(name: str) -> None:
    assert not judged(name, DOCS)


def test_in_conversation_a_speaker_and_a_name_used_mid_sentence_are_names() -> None:
    turns = ["I lost my job at Door Dash.", "My dog Coco loves the beach.", "Lucky John got the tickets."]
    speakers = frozenset({"John", "Gina"})
    assert judged("Gina", turns, speakers) and judged("Door Dash", turns, speakers)
    assert judged("Coco", turns + ["We walked Coco by the lake."], speakers)
    # an English word before a name is tried alone: "Lucky John" is John
    known, common = names.known_names(turns, speakers)
    assert names.names_in("Lucky John got the tickets.", known, common, speakers) == ["John"]
    assert names.names_in("Hey Jo, wow.", known, common, speakers | {"Jo"}) == ["Jo"]


@pytest.mark.parametrize("name", ["Italy", "Sicily", "Tessaly"])
def test_a_name_written_mid_sentence_is_one_whatever_its_ending(name: str) -> None:
    # "-ly", "-ed", "-ing" open a line as adverbs and participles ("Seamlessly", "Created"); written
    # capitalised after a lower-case word, the same endings are a name's
    text = f"Dana moved to {name} in spring. Seamlessly integrate the reports."
    known, common = names.known_names([text])
    assert names.is_name(name, known, common) and not names.is_name("Seamlessly", known, common)


@pytest.mark.parametrize("name, is_one", [
    ("Dr. Patel", True), ("Professor Lindqvist", True), ("Deputy Mayor Fiona Gallagher", True), ("Aunt Leila", True),
    ("Umbrella Corp", True), ("Bank of America Corp", True), ("Halvorsen & Reid LLP", True), ("Acme Inc.", True),
    ("Dr", False), ("Professor", False), ("The Corp", False), ("Is Corp", False), ("Dr. the", False)])
def test_a_title_before_or_a_legal_form_after_makes_the_run_a_name(name: str, is_one: bool) -> None:
    # "patel", "umbrella" and "professor" are in the dictionary: the title or the form is the proof
    assert judged(name, DOCS) is is_one


def test_a_proven_name_is_one_whatever_its_words() -> None:
    known, common = names.known_names(DOCS)
    assert not names.is_name("Stripe", known, common) and not names.is_name("Blue Harbor Bank", known, common)
    proven = frozenset({"Stripe", "Blue Harbor Bank", "Mem0_KEY"})
    assert names.is_name("Stripe", known, common, proven=proven)
    assert names.is_name("Blue Harbor Bank", known, common, proven=proven)
    assert not names.is_name("Mem0_KEY", known, common, proven=proven)   # structure still decides
    assert names.names_in("Stripe bills us monthly.", known, common, proven=proven) == ["Stripe"]


def test_a_bare_singular_subject_is_a_name() -> None:
    texts = ["Stripe processes the payments.", "Dr. Patel met Ravi. Oracle hosts the database.",
             "Berlin is the team's base.", "Security matters. Documentation covers the API.",
             "Three is the number. Friendship is a gift. Webhooks notify your server.",
             "Storage grows with each upload. Search returns the best results."]
    assert names.bare_subjects(texts, frozenset()) == {"Stripe", "Oracle", "Berlin"}
    # a word the document writes in lower case is a word
    assert names.bare_subjects(["Oracle hosts the database.", "Ask the oracle."], frozenset({"oracle"})) == set()


def test_an_instruction_opening_a_line_is_not_a_name() -> None:
    text = "Automate the weekly report. Downscale your images with Pillow. We moved to San Francisco."
    known, common = names.known_names([text])
    assert names.names_in(text, known, common) == ["San Francisco"]


def test_the_attribution_prefix_proves_nothing() -> None:
    # "Maria said that Lucky John ..." writes "Lucky" mid-sentence only because of the prefix
    known, _ = names.known_names(["Maria said that Lucky John got to go."], frozenset({"Maria", "John"}))
    assert "Lucky John" not in known and "Lucky" not in known


def test_labels_of_documentation_are_no_speakers() -> None:
    assert names.speakers_in("Note: turn on logging\nDatabase: PostgreSQL\nWarning: slow\n") == frozenset()
    assert names.speakers_in("[D1:1 | 2023-05-08T13:56:00Z] Maria: hi\n") == frozenset({"Maria"})
    assert names.speakers_in("Participants: Dana, Ravi\n") == frozenset({"Dana", "Ravi"})


@pytest.mark.parametrize("phrase, thing", [
    ("data validation", True), ("billing migration", True), ("search team", True), ("payments team", True),
    ("Kubernetes migration", True), ("CI pipeline", True), ("Q4 tooling budget", True), ("Kubernetes", False),
    ("Voice Configuration", False), ("If the pipeline", False),
    ("about different fantasy novels", False), ("system automatically stores", False), ("it", False),
    ("values matching is", False), ("a very long noun phrase here", False)])
def test_a_thing_a_relation_names_in_lower_case(phrase: str, thing: bool) -> None:
    assert names.is_thing(phrase) is thing


def test_english_words_and_given_names() -> None:
    assert all(names.is_english_word(w) for w in ("Prepares", "Tailors", "Feedback", "Logging", "Zero-latency"))
    assert not any(names.is_english_word(w) for w in ("Ravi", "Priya", "Mem0", "Marco", "Grace", "Maria"))


def test_a_numbered_title_is_no_topic() -> None:
    assert names.topic_from_title("Conversation 41, session 3") is None
    assert names.topic_from_title("Billing migration: cutover specification") == "billing migration"


def test_a_lower_case_subject_is_a_thing_the_document_names_more_than_once() -> None:
    from pipeline.facts import normalize

    texts = ["The invoice system needs a rewrite.", "Dana owns the invoice system now.", "The plugin includes a cache."]
    assert normalize.recurring_things({"invoice system", "plugin includes", "system"}, texts) == {"invoice system"}


def test_a_function_of_the_code_is_no_name() -> None:
    known, common = names.known_names(DOCS)
    assert names.names_in("AddMemories(): Adds user memories for Dana Kim.", known, common) == ["Dana Kim"]


@pytest.mark.parametrize("name", [
    "ValueError", "TutorAgent", "PreToolUse", "FunctionCalling", "CustomerSupportAIAgent", "SessionStart",
    "MemoryService", "X-API-Key", "Content-Type", "JWTs", "UUID", "Async", "Webhooks", "AI Studio API Key",
    "LongMemEval Overall", "OpenClaw Version", "Mem0 Inactive", "ANDed", "TS SDKs", "Base URL", "YYYY-MM-DD",
    "Base64", "PUT", "How'd", "Metadata Filtering", "CRM", "GetMemories", "EnableGraph", "ADK BaseMemoryService",
    "Retry-After", "Config", "Metadata", "SimpleChatEngine"])
def test_code_fields_formats_and_aspects_of_documentation_are_no_names(name: str) -> None:
    assert not judged(name, DOCS + ["It logs to Base URL and OpenClaw before calling Mem0."])


@pytest.mark.parametrize("name", ["OpenSearch", "AgentOps", "YouTube", "LangChain", "NousResearch", "FlowiseAI",
                                  "PGVector", "OpenAI", "GitHub", "Mem0 REST API", "Gemini API", "Python SDK",
                                  "AWS SDK", "Toyota Corolla", "LlamaIndex", "Florida Keys"])
def test_products_in_camel_case_and_named_sdks_stay_names(name: str) -> None:
    assert judged(name, DOCS + [f"We call {name} from Python and AWS in Florida daily."])


def test_what_a_document_sets_as_code_is_no_name() -> None:
    text = "Use `AsyncMemory` for async code.\n\n```python\nm = Memory(BatchSize=3)\nclient = OpenSearch()\n```\n"
    code = names.code_words(text)
    assert {"AsyncMemory", "BatchSize", "OpenSearch"} <= code and "Memory" not in code
    # a name the prose writes unmarked is no code, though an example calls it
    assert "OpenAI" not in names.code_words("OpenAI hosts the model.\n\n```python\nclient = OpenAI()\n```\n")
    # unless the example defines it: the prose then names the example's class
    tutor = "The PersonalAITutor class keeps memories.\n\n```python\nclass PersonalAITutor:\n    pass\n```\n"
    assert "PersonalAITutor" in names.code_words(tutor)
    assert "LanguageModelV3" in names.code_words("It supports <code>LanguageModelV3</code> types.\n")
    known, common = names.known_names(DOCS)
    assert names.names_in("AsyncMemory and BatchSize help Dana Kim.", known, common, code=code) == ["Dana Kim"]


def test_a_part_of_a_page_is_no_recurring_thing() -> None:
    from pipeline.facts import normalize

    texts = ["The name field is stored as context.", "Set the name field once.", "The invoice system is old.",
             "Dana owns the invoice system."]
    assert normalize.recurring_things({"name field", "invoice system"}, texts) == {"invoice system"}


def test_a_word_the_prose_writes_in_lower_case_is_no_name_and_links_and_code_are_no_prose() -> None:
    from pipeline.facts import normalize

    page = ("# Setup\n\nStore embeddings per user id with [Gemini](https://ai.google.dev/gemini).\n\n"
            "```python\nclient = TypeScriptClient()\n```\n")
    assert "gemini" not in names.prose_of(page) and "TypeScriptClient" not in names.prose_of(page)
    claims = [{"claim_id": f"c{i}", "doc_id": "d", "claim_text": text, "is_attributed": False, "valid_from": None,
               "valid_until": None, "precision": None, "kind": None, "asserted_at": None, "title": "Setup",
               "opening": page, "version_text": page}
              for i, text in enumerate(["Embeddings are stored per user.", "User ID scopes every memory.",
                                        "Gemini answers questions.", "TypeScript Client SDK ships in npm."])]
    _, mentions = normalize.normalize_version(claims, lambda c, o: f"{c}:{o}")
    surfaces = {m["surface"] for m in mentions}
    assert {"Gemini", "TypeScript Client SDK"} <= surfaces
    assert not surfaces & {"Embeddings", "User ID"}


def _page_mentions(*texts: str, page: str) -> set[str]:
    return normalized(texts, page=page)[1]


def test_a_list_of_names_vouches_for_its_items_and_a_list_of_features_for_none() -> None:
    text = "The plugin works with LangChain, Cursor, CrewAI, and Codex, and also with Mem0."
    listed = "The client supports OpenAI, Anthropic, Google, Groq and Cohere."
    features = "Each memory supports Add, Search, Update, and Delete."
    page = f"{text}\n\n{listed}\n\n{features}\n\nRun `mem0 init` first.\n"
    found = _page_mentions(text, listed, features, page=page)
    assert {"LangChain", "Cursor", "CrewAI", "Codex", "OpenAI", "Anthropic", "Google", "Groq", "Cohere"} <= found
    assert not {"Add", "Search", "Update", "Delete"} & found
    two = "The SDK ships for Python and TypeScript."
    literal = "When you pass infer=False, Mem0 stores the payload."
    found = _page_mentions(two, literal, page=f"{two}\n\n{literal}\n\nRun `mem0 init` first.\n")
    assert "Python" in found and "False" not in found


def test_an_owner_and_its_thing_are_two_names() -> None:
    text = "OpenAI's GPT-4 answers, and Mem0's LangGraph agent stores the memories."
    found = _page_mentions(text, page=f"{text}\n\nRun `pip install mem0ai` first.\n")
    assert {"OpenAI", "GPT-4", "Mem0", "LangGraph"} <= found and not any("'s" in f for f in found)


def test_a_link_titles_a_page_and_a_host_name_is_no_word() -> None:
    texts = ["Refer to the [Qdrant Documentation](https://qdrant.tech/documentation) for more.",
             "Start at [Self-Hosted Setup](/open-source/setup).", "![Mem0 Dify Integration](/images/dify.png).",
             "Add memory to [Cursor](https://cursor.com) with the server.",
             "Start a new Cursor session.", "Go to Cursor Settings and open Cursor once more."]
    page = "\n\n".join(texts) + "\n\nRun `mem0 init` first.\n"
    found = _page_mentions(*texts, page=page)
    assert "Qdrant" in found and not {"Qdrant Documentation", "Self-Hosted", "Self-Hosted Setup", "Mem0 Dify"} & found
    assert "cursor" not in names.common_words(["Installed ([cursor.com](https://cursor.com))."])


def test_a_capitalised_camel_case_identifier_is_still_code_and_a_package_name_no_code() -> None:
    page = "`batchSize` and `showProgressBar` are accepted. Install `zod` for schemas.\n"
    found = _page_mentions("BatchSize and showProgressBar are accepted.", "Zod v3 validates the schemas.", page=page)
    assert "BatchSize" not in found and "Zod" in found
    # an identifier of an example that the prose writes capitalised is the prose's name
    assert "elizaOS" not in names.code_words("ElizaOS runs agents.\n\n```bash\ngit clone https://x/elizaOS/eliza\n```\n")


def test_a_tool_the_page_runs_in_its_shell_blocks_is_a_name_though_english_knows_it() -> None:
    texts = ["The server ships as a Docker image.", "Keep environment files and Docker Compose definitions in git.",
             "Make sure the port is free."]
    page = ("\n\n".join(texts) + "\n\n```bash\ndocker compose up -d \\\n  make\n$ sudo make bootstrap\n```\n"
            "```python\nhelm = 1\n```\n")
    assert {"docker", "docker compose", "make", "make bootstrap"} <= names.commands(page)
    assert "helm" not in names.commands(page)  # a block of Python runs no command
    found = _page_mentions(*texts, page=page)
    assert {"Docker", "Docker Compose"} <= found and "Make" not in found
    # without the command, "Docker" is an English word a page of documentation capitalises
    plain = page.replace("docker compose up -d", "echo up")
    assert not {"Docker", "Docker Compose"} & _page_mentions(*texts, page=plain)


def test_a_fenced_block_inside_an_mdx_component_is_code_at_any_indent() -> None:
    page = ("<Tabs>\n  <Tab title=\"Python\">\n    ```python\n    client = PostgresStore(url)\n    ```\n"
            "  </Tab>\n</Tabs>\n\nPostHog counts the events.\n\n    ```bash\n    pip install telemetry\n    ```\n")
    assert "PostgresStore" in names.code_words(page)
    assert "client" not in names.common_words([page]) and "telemetry" not in names.common_words([page])
    assert "PostHog counts the events." in names.prose_of(page)


def test_a_list_proves_its_names_in_a_sentence_no_claim_was_made_of() -> None:
    claim = "For the speech key, open the [Deepgram Console](https://console.deepgram.com/)."
    page = ("This guide builds an assistant using LiveKit, Deepgram, OpenAI, and Mem0, focusing on travel.\n\n"
            "## Mem0 Client and Agent Definition\n\nInstall the plugins of silero and deepgram.\n\n"
            f"{claim}\n\nRun `pip install livekit` first.\n")
    found = _page_mentions(claim, page=page)
    assert "Deepgram" in found
    # a heading's capitals list no names: the same words in a heading prove nothing
    headed = page.replace("This guide builds an assistant using LiveKit, Deepgram, OpenAI, and Mem0, focusing on "
                          "travel.", "## LiveKit, Deepgram, OpenAI, and Mem0")
    assert "Deepgram" not in _page_mentions(claim, page=headed)
    assert "Agent Definition" not in names.coordinated([names.sentences_of(page)], lambda item: item == "Mem0 Client")


def test_a_word_english_makes_of_its_words_needs_proof_where_documentation_opens_a_cell() -> None:
    assert names.is_english_compound("Lifecycle") and names.is_english_compound("Uncomment")
    assert not names.is_english_compound("Carmen") and not names.is_english_compound("Qdrant")
    page = "| Component | Included |\n|---|---|\n| Lifecycle Hooks | No |\n\nRun `mem0 init` once.\n"
    assert "Lifecycle Hooks" not in _page_mentions("Component: Lifecycle Hooks, Included: No.", page=page)
    # in a note the same word opening a sentence is still a name's ("Healthcare" is no dictionary word)
    known, common = names.known_names(["Pinecone hosts the vectors."], documentation=False)
    assert names.is_name("Pinecone", known, common, documentation=False)


def test_a_label_of_documentation_names_its_feature_not_a_thing() -> None:
    texts = ["Multi-Agent Support: A single service gives all agents the same memory.",
             "Mem0 Platform: a hosted service.", "Teams run the Mem0 Platform in production."]
    found = _page_mentions(*texts, page="\n\n".join(texts) + "\n\nRun `mem0 init` first.\n")
    assert "Multi-Agent Support" not in found and "Mem0 Platform" in found
    label = "Create or Open Your Dify Project: open your Dify workspace."
    link = "Read [Mem0 OSS Quickstart](https://docs.mem0.ai/open-source/overview)."
    found = _page_mentions(label, link, page=f"{label}\n\n{link}\n\nRun `mem0 init` first.\n")
    assert "Dify" in found and "Mem0 OSS" in found and not {"Dify Project", "Mem0 OSS Quickstart"} & found
