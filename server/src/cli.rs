//! The command line. Every subcommand acts on the same data directory and
//! database as the server, and may run while it runs.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "lore",
    version,
    about = "Lore: a self-hosted knowledge-base answering engine.",
    long_about = "Lore answers questions from your documentation with citations, or refuses honestly.\n\n\
Configuration is layered: compiled defaults, then lore.toml (or --config PATH), then LORE_* \
environment variables with __ between sections (LORE_DATABASE__URL=postgres://…).",
    after_help = "Start with `lore serve`, then open the printed URL."
)]
pub struct Cli {
    /// Configuration file (default: ./lore.toml when it exists).
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run Lore: console, admin API and public API on server.bind.
    ///
    /// Applies pending migrations first. With no identity provider configured
    /// it prints a one-time sign-in link (valid 15 minutes, from this machine only).
    Serve,
    /// Apply pending database migrations and exit.
    Migrate {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Print the effective configuration, with secrets redacted.
    Config {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Manage knowledge sources.
    Sources {
        #[command(subcommand)]
        command: SourcesCommand,
    },
    /// Index a file, a directory of files, or a website (creating or reusing
    /// its source), with a progress bar.
    Ingest {
        /// A file or directory path, an http(s) URL, or a git repository
        /// (a `git://` or `ssh://` URL, or a URL or path ending in `.git`).
        target: String,
        /// The source's name (default: the directory, file or host name).
        #[arg(long)]
        name: Option<String>,
        /// Machine-readable output (no progress bar).
        #[arg(long)]
        json: bool,
    },
    /// Golden questions and evals: does a version answer them right?
    Evals {
        #[command(subcommand)]
        command: EvalsCommand,
    },
    /// The Dashboard's rollups.
    Rollups {
        #[command(subcommand)]
        command: RollupsCommand,
    },
    /// Benchmarks (they print a table and write a JSON record).
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// Model providers: quick add, list, probe.
    Providers {
        #[command(subcommand)]
        command: ProvidersCommand,
    },
    /// Access keys for the public API and the widget.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Users of the application database (what keys act as).
    Users {
        #[command(subcommand)]
        command: UsersCommand,
    },
    /// Roles: HarperDB's permission trees.
    Roles {
        #[command(subcommand)]
        command: RolesCommand,
    },
    /// The application database's schema file.
    Schema {
        #[command(subcommand)]
        command: SchemaCommand,
    },
    /// Ask a question through the answer pipeline (recorded as surface `cli`).
    Ask {
        question: String,
        /// Answer as this caller would be answered: admin (the default,
        /// every source), everyone (the widget, keys without a user),
        /// role:NAME or user:NAME.
        #[arg(long = "as", value_name = "WHO")]
        answer_as: Option<String>,
        /// Machine-readable output (the same object as POST /answer).
        #[arg(long)]
        json: bool,
        /// Rate the answer once it is shown: alone, asks (helpful? y/n, and
        /// what was wrong); `--rate=helpful` or `--rate=unhelpful` without
        /// asking.
        #[arg(
            long,
            value_name = "VERDICT",
            num_args = 0..=1,
            require_equals = true,
            default_missing_value = "ask",
            value_parser = ["ask", "helpful", "unhelpful"]
        )]
        rate: Option<String>,
        /// The rating's comment (with `--rate`), at most 1000 characters.
        #[arg(long, requires = "rate")]
        comment: Option<String>,
    },
    /// Search the indexed content (hybrid: vector and full text).
    Search {
        query: String,
        /// How many results at most.
        #[arg(long, default_value_t = 5)]
        top_k: usize,
        /// Search what this caller may read: admin (the default), everyone,
        /// role:NAME or user:NAME.
        #[arg(long = "as", value_name = "WHO")]
        answer_as: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
}

impl Command {
    /// Whether the command was asked for machine-readable output; its
    /// failure is then printed as JSON too.
    pub fn json(&self) -> bool {
        match self {
            Command::Serve | Command::Bench { .. } => false,
            Command::Migrate { json }
            | Command::Config { json }
            | Command::Ingest { json, .. }
            | Command::Ask { json, .. }
            | Command::Search { json, .. }
            | Command::Rollups { command: RollupsCommand::Rebuild { json } } => *json,
            Command::Sources { command } => match command {
                SourcesCommand::Add { json, .. }
                | SourcesCommand::Alter { json, .. }
                | SourcesCommand::List { json }
                | SourcesCommand::Enable { json, .. }
                | SourcesCommand::Disable { json, .. }
                | SourcesCommand::Reindex { json, .. }
                | SourcesCommand::Rm { json, .. } => *json,
            },
            Command::Providers { command } => match command {
                ProvidersCommand::Add { json, .. }
                | ProvidersCommand::List { json }
                | ProvidersCommand::Probe { json, .. } => *json,
            },
            Command::Schema { command: SchemaCommand::Apply { json, .. } } => *json,
            Command::Evals { command } => match command {
                EvalsCommand::Run { json, .. }
                | EvalsCommand::List { json }
                | EvalsCommand::Add { json, .. } => *json,
            },
            Command::Users { command } => match command {
                UsersCommand::List { json }
                | UsersCommand::Add { json, .. }
                | UsersCommand::Alter { json, .. }
                | UsersCommand::Drop { json, .. } => *json,
            },
            Command::Roles { command } => match command {
                RolesCommand::List { json }
                | RolesCommand::Add { json, .. }
                | RolesCommand::Alter { json, .. }
                | RolesCommand::Drop { json, .. } => *json,
            },
            Command::Keys { command } => match command {
                KeysCommand::Create { json, .. }
                | KeysCommand::List { json }
                | KeysCommand::Revoke { json, .. } => *json,
            },
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum RollupsCommand {
    /// Recompute every rollup from the recorded answer runs (replaces what
    /// is stored, in one transaction).
    Rebuild {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum EvalsCommand {
    /// Answer every golden question as a profile version would (the active
    /// one by default), store the result with it, and exit 1 when it got
    /// worse since its last eval on the same questions.
    Run {
        /// The version to evaluate (default: the active one).
        #[arg(long)]
        version: Option<i32>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// List the golden questions.
    List {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Add a golden question (replacing one with the same wording).
    Add {
        question: String,
        /// A fact a right answer holds (repeat for several).
        #[arg(long)]
        fact: Vec<String>,
        /// A right answer is the profile's refusal.
        #[arg(long, conflicts_with_all = ["fact", "source"])]
        refuse: bool,
        /// The id of the source a right answer cites.
        #[arg(long)]
        source: Option<String>,
        /// Ask it as this caller: everyone, role:NAME or user:NAME (default:
        /// an admin, who reads every source).
        #[arg(long = "as", value_name = "WHO")]
        asked_as: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Embedding throughput and query latency, beside sentence-transformers
    /// and ONNX Runtime when `--peers-python` is given (`scripts/bench-embed`).
    Embed {
        /// How many chunks to embed.
        #[arg(long, default_value_t = 512)]
        chunks: usize,
        /// The Python with sentence-transformers and onnxruntime.
        #[arg(long, requires_all = ["peers_script", "onnx"])]
        peers_python: Option<PathBuf>,
        /// scripts/bench/embed_peers.py
        #[arg(long)]
        peers_script: Option<PathBuf>,
        /// The int8 ONNX export of all-MiniLM-L6-v2.
        #[arg(long)]
        onnx: Option<PathBuf>,
        /// Where the JSON record goes (default bench-results/embed.json).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Crawl + index pages/s of a generated site, and retrieval latency at
    /// several corpus sizes, flat and with the vector index; with --table,
    /// a table source's first sync against the embedder alone and the time
    /// from a row's update to its retrieval instead; with --git, a git
    /// repository's first sync against the embedder alone and the time from
    /// a one-file commit, announced by the webhook, to its retrieval.
    Index {
        #[arg(long, default_value_t = 200)]
        pages: usize,
        /// Corpus sizes for the retrieval latency (comma list).
        #[arg(long, value_delimiter = ',', default_values_t = [10_000usize, 100_000])]
        sizes: Vec<usize>,
        /// Measure a table source instead of a website.
        #[arg(long)]
        table: bool,
        /// With --table: rows in the table.
        #[arg(long, default_value_t = 100_000)]
        rows: usize,
        /// With --table: rows updated one at a time for the update-to-retrievable
        /// latency; with --git: one-file commits.
        #[arg(long, default_value_t = 40)]
        updates: usize,
        /// Measure a git repository source instead of a website.
        #[arg(long, conflicts_with = "table")]
        git: bool,
        /// With --git: Markdown files in the repository.
        #[arg(long, default_value_t = 2_000)]
        files: usize,
        /// Where the JSON record goes (default bench-results/index.json,
        /// index-table.json or index-git.json).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// The Dashboard's aggregate time over the rollups of many answer runs.
    Dashboard {
        /// Answer runs whose rollups are generated.
        #[arg(long, default_value_t = 1_000_000)]
        runs: u64,
        /// Where the JSON record goes (default bench-results/dashboard.json).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// The tool server (MCP) against the same calls made directly, tools/list
    /// with many exported tables, and push channels of many sessions.
    Mcp {
        /// Requests per latency measurement.
        #[arg(long, default_value_t = 300)]
        requests: usize,
        /// Exported tables (tools/list lists their verb tools).
        #[arg(long, default_value_t = 100)]
        tables: usize,
        /// Sessions with an open push channel.
        #[arg(long, default_value_t = 1000)]
        sessions: usize,
        /// Role changes timed to their list_changed.
        #[arg(long, default_value_t = 40)]
        changes: usize,
        /// Pages of the generated site indexed for `retrieve`.
        #[arg(long, default_value_t = 20)]
        pages: usize,
        /// Where the JSON record goes (default bench-results/mcp.json).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// The operations API and REST over HTTP on loopback, on SQLite and
    /// PostgreSQL, beside HarperDB 4.7 (`../shared/peers/harperdb.sh start`).
    Operations {
        /// Records inserted (in batches of 500).
        #[arg(long, default_value_t = 10_000)]
        records: usize,
        /// Requests per latency measurement.
        #[arg(long, default_value_t = 500)]
        requests: usize,
        /// A PostgreSQL server (a fresh database is made on it and dropped).
        #[arg(long)]
        postgres_url: Option<String>,
        /// HarperDB's operations API (`http://127.0.0.1:9925/`).
        #[arg(long)]
        harperdb_url: Option<String>,
        /// HarperDB's REST port (`http://127.0.0.1:9926`).
        #[arg(long)]
        harperdb_rest_url: Option<String>,
        #[arg(long, default_value = "admin")]
        harperdb_user: String,
        /// HarperDB's admin password (read from the environment, not the command line).
        #[arg(long, env = "HDB_PEER_PASS", default_value = "lore-peer-pass", hide_env_values = true)]
        harperdb_password: String,
        /// Where the JSON record goes (default bench-results/operations.json).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// The public API over HTTP on loopback: /retrieve latency, /answer's
    /// overhead excluding model time, cache-hit latency and throughput at 8,
    /// 32 and 64 clients (`scripts/bench-answer` starts the model server).
    Answer {
        /// An OpenAI-compatible endpoint (`http://127.0.0.1:PORT/v1`) that answers.
        #[arg(long)]
        llm_endpoint: String,
        /// The model name to ask the endpoint for.
        #[arg(long, default_value = "smollm2-135m-instruct")]
        llm_model: String,
        /// Pages of the generated site crawled and embedded for real.
        #[arg(long, default_value_t = 20)]
        pages: usize,
        /// Chunks in the corpus (topped up with synthetic chunks).
        #[arg(long, default_value_t = 10_000)]
        chunks: usize,
        /// Requests per single-client measurement.
        #[arg(long, default_value_t = 200)]
        requests: usize,
        /// Where the JSON record goes (default bench-results/answer.json).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Wrong answers served and right answers lost by the grounding check,
    /// over SQLite's documentation (`scripts/bench-quality`).
    Quality {
        /// The question set: six pages of SQLite's documentation, or 110 of
        /// PostgreSQL 15's.
        #[arg(long, value_enum, default_value = "sqlite")]
        set: crate::bench::QualitySet,
        /// An OpenAI-compatible endpoint (`http://127.0.0.1:PORT/v1`) that
        /// answers; without it, the embedded model.
        #[arg(long)]
        llm_endpoint: Option<String>,
        /// The model name to ask the endpoint for.
        #[arg(long, default_value = "smollm2-135m-instruct")]
        llm_model: String,
        /// Where the set's pages are (default: where Debian's sqlite3-doc
        /// or postgresql-doc-15 puts them).
        #[arg(long)]
        docs: Option<PathBuf>,
        /// At most this many answerable and this many unanswerable questions.
        #[arg(long)]
        limit: Option<usize>,
        /// The similarity in meaning at which the "with paraphrases" row
        /// serves a statement said in other words (the value MiniLM was
        /// measured at; `answer.paraphrase_min_similarity` is off by default).
        #[arg(long, default_value_t = 0.6)]
        paraphrase_similarity: f32,
        /// Where the JSON record goes (default bench-results/quality.json).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// `/retrieve` and cached `/answer` with one and two replicas on
    /// PostgreSQL, vectors in a local directory and on an S3-compatible
    /// object store (`scripts/bench-replicas` starts the model and S3 servers).
    Replicas {
        /// An OpenAI-compatible endpoint (`http://127.0.0.1:PORT/v1`) that answers.
        #[arg(long)]
        llm_endpoint: String,
        /// The model name to ask the endpoint for.
        #[arg(long, default_value = "smollm2-135m-instruct")]
        llm_model: String,
        /// The PostgreSQL server; a fresh database is made on it per store.
        #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
        postgres_url: String,
        /// An S3-compatible endpoint (credentials from AWS_*, as the AWS SDKs read them).
        #[arg(long)]
        s3_endpoint: String,
        /// Pages of the generated site crawled and embedded for real.
        #[arg(long, default_value_t = 20)]
        pages: usize,
        /// Requests per measurement.
        #[arg(long, default_value_t = 600)]
        requests: usize,
        /// Concurrent clients.
        #[arg(long, default_value_t = 16)]
        clients: usize,
        /// Where the JSON record goes (default bench-results/replicas.json).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Retrieval recall with and without a reranker over SQLite's
    /// documentation (`scripts/bench-rerank`).
    Rerank {
        /// A `/rerank` endpoint's API base (`http://127.0.0.1:PORT/v1`).
        #[arg(long)]
        rerank_endpoint: String,
        /// The model name to ask the endpoint for.
        #[arg(long, default_value = "nanoranker")]
        rerank_model: String,
        /// How many of the best candidates the reranker reorders.
        #[arg(long, default_value_t = 20)]
        candidates: usize,
        /// Where SQLite's documentation pages are (Debian's sqlite3-doc).
        #[arg(long, default_value = "/usr/share/doc/sqlite3")]
        docs: PathBuf,
        /// Where the JSON record goes (default bench-results/rerank.json).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Retrieval from 10,000 to a million chunks: `/retrieve` at 1, 8 and 32
    /// clients, recall@10 against exact search, build time, memory, disk and
    /// 1% changed chunks, beside FAISS and hnswlib on the same vectors
    /// (`scripts/bench-retrieval`).
    Retrieval {
        /// Corpus sizes (comma list).
        #[arg(long, value_delimiter = ',', default_values_t = [10_000usize, 100_000, 1_000_000])]
        sizes: Vec<usize>,
        /// Directories of documentation pages for the real chunks (comma list).
        #[arg(long, value_delimiter = ',', required = true)]
        docs: Vec<PathBuf>,
        /// At most this many real chunks (read, chunked and embedded once,
        /// then kept in --cache); past them chunks are blends of real ones.
        #[arg(long, default_value_t = 20_000)]
        real: usize,
        /// Queries, each a sentence of a real chunk.
        #[arg(long, default_value_t = 200)]
        queries: usize,
        /// `/retrieve` requests per single-client measurement.
        #[arg(long, default_value_t = 400)]
        requests: usize,
        /// Where the embedded real chunks are kept between runs.
        #[arg(long)]
        cache: PathBuf,
        /// The peers' Python (with faiss, hnswlib and lancedb).
        #[arg(long)]
        peers_python: Option<PathBuf>,
        /// scripts/bench/retrieval_peers.py.
        #[arg(long)]
        peers_script: Option<PathBuf>,
        /// Where the JSON record goes (default bench-results/retrieval.json).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// The embedded model's prompt and generation speed and its time to the
    /// first token for a 1,500-token prompt, side by side with llama.cpp's
    /// `llama-server` on the same GGUF file and the same number of threads
    /// (`scripts/bench-generate`).
    Generate {
        /// The GGUF file (default: the embedded provider's default model,
        /// fetched into the machine's model cache when missing).
        #[arg(long)]
        model: Option<PathBuf>,
        /// llama.cpp's `llama-server` binary, for the side-by-side run.
        #[arg(long)]
        llama_server: Option<PathBuf>,
        /// Tokens generated per measurement.
        #[arg(long, default_value_t = 128)]
        tokens: u32,
        /// Measurements of each kind (the median is reported).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Where the JSON record goes (default bench-results/generate.json).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ProvidersCommand {
    /// Quick add: stores the account, registers the model, probes it with a
    /// short chat completion and points answering (the generation role) at
    /// it. Nothing is stored when the probe fails.
    Add {
        /// embedded (a model run inside Lore: no endpoint, no key), openai,
        /// groq, together, mistral, deepseek, openrouter, ollama, llama_cpp,
        /// vllm, lm_studio, localai or custom.
        #[arg(long)]
        kind: String,
        /// The API base (default: the type's usual one; required for custom).
        #[arg(long)]
        endpoint: Option<String>,
        /// The model (for embedded, a GGUF file in `models.dir` or an
        /// absolute path; blank or absent: SmolLM2-135M-Instruct).
        #[arg(long, default_value = "")]
        model: String,
        /// The name of an environment variable holding the API key (keeps
        /// the key out of the shell history and the process list).
        #[arg(long, value_name = "VAR")]
        api_key_env: Option<String>,
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Accounts, model targets with their probe state, and the roles.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Probe a model target again (a minimal real call).
    Probe {
        target: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key and print its raw value, once.
    Create {
        #[arg(long)]
        name: String,
        /// secret or widget.
        #[arg(long, default_value = "secret")]
        kind: String,
        /// answer, retrieve, mcp, operations (repeatable; secret keys).
        #[arg(long = "scope")]
        scopes: Vec<String>,
        /// Allowed origin (repeatable; widget keys).
        #[arg(long = "origin")]
        origins: Vec<String>,
        /// Requests per minute (widget keys; default 30).
        #[arg(long)]
        rate_limit: Option<u32>,
        /// The user the key acts for (needed for the mcp and operations scopes).
        #[arg(long)]
        user: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Keys with prefix, kind, scopes, status and 7-day usage (never the raw value).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key: callers using it get 401 at once.
    Revoke {
        key: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum UsersCommand {
    /// Users with their role and whether they are active.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Add a user with a role (users have no password: make a key for them).
    Add {
        username: String,
        #[arg(long)]
        role: String,
        /// Add it inactive (its keys are refused until it is activated).
        #[arg(long)]
        inactive: bool,
        #[arg(long)]
        json: bool,
    },
    /// Give a user another role, or (de)activate it; counts from the next request.
    Alter {
        username: String,
        #[arg(long)]
        role: Option<String>,
        #[arg(long)]
        active: Option<bool>,
        #[arg(long)]
        json: bool,
    },
    /// Drop a user; its keys are revoked.
    Drop {
        username: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum RolesCommand {
    /// Roles with their permission trees.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Add a role; `--permission` is HarperDB's permission object as JSON.
    Add {
        name: String,
        #[arg(long)]
        permission: String,
        #[arg(long)]
        json: bool,
    },
    /// Rename a role and/or replace its permission tree (ROLE: id or name).
    Alter {
        role: String,
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        permission: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Drop a role no user has (ROLE: id or name).
    Drop {
        role: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum SchemaCommand {
    /// Apply the schema file (`appdb.schema`, or `--file`): create the
    /// tables it declares, add their new attributes; nothing is dropped.
    Apply {
        /// A schema file other than the configured one.
        #[arg(long)]
        file: Option<std::path::PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

// Parsed once per process: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum SourcesCommand {
    /// Create a source (an upload source, a website to crawl, or an
    /// application table whose rows become documents). The options below
    /// fill the kind's configuration; the kind refuses one it does not take.
    Add {
        #[arg(long)]
        name: String,
        /// upload, website, git or table (page_bank is announced, not yet available).
        #[arg(long)]
        kind: String,
        /// Website: the start URL. Git: the repository's URL or path.
        #[arg(long)]
        url: Option<String>,
        /// Git: the branch to follow (default: the remote's default branch).
        #[arg(long)]
        branch: Option<String>,
        /// Git: where citations link, a template over {branch}, {path} (and
        /// a final #{anchor}), or github, gitlab, gitea, bitbucket.
        #[arg(long)]
        citation_url: Option<String>,
        /// Website: sitemap (default) or crawl.
        #[arg(long)]
        discovery: Option<String>,
        /// Website: glob patterns on the URL path to keep; git: on the file's
        /// path in the repository (repeatable).
        #[arg(long)]
        include: Vec<String>,
        /// Website, git: glob patterns of what to leave out (repeatable).
        #[arg(long)]
        exclude: Vec<String>,
        #[arg(long)]
        max_pages: Option<usize>,
        #[arg(long)]
        max_depth: Option<usize>,
        /// Table: the application database (default `data`).
        #[arg(long)]
        database: Option<String>,
        /// Table: the table whose rows become documents.
        #[arg(long)]
        table: Option<String>,
        /// Table: the attribute that titles each row's document.
        #[arg(long)]
        title: Option<String>,
        /// Table: an attribute that makes the text, a paragraph each (repeatable).
        #[arg(long)]
        text: Vec<String>,
        /// Table: the text as a template instead, `{name}` for an attribute.
        #[arg(long)]
        template: Option<String>,
        /// Table: where citations link to, a template like `--template`.
        #[arg(long)]
        url_template: Option<String>,
        /// Table: the conditions rows must meet, as the JSON array
        /// `search_by_conditions` takes.
        #[arg(long)]
        conditions: Option<String>,
        /// The whole configuration as a JSON object (any kind; the options
        /// above override its keys). Not `--config`: that names Lore's own
        /// configuration file, for every command.
        #[arg(long, value_name = "JSON")]
        source_config: Option<String>,
        /// static, low, medium or high: how often it is re-synced.
        #[arg(long)]
        volatility: Option<String>,
        /// Who may read it through answers and retrieval: everyone (an
        /// upload's or a website's default), table (a table source's: its
        /// table's readers), or role names separated by commas.
        #[arg(long, value_name = "everyone|table|ROLE[,ROLE…]")]
        audience: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Change who may read a source through answers and retrieval (from the
    /// next request; nothing is re-indexed).
    Alter {
        source: String,
        /// everyone, table (a table source's table's readers), or role names
        /// separated by commas.
        #[arg(long, value_name = "everyone|table|ROLE[,ROLE…]")]
        audience: String,
        #[arg(long)]
        json: bool,
    },
    /// List sources with status, counts and freshness.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Make a source's content searchable again (nothing is re-embedded).
    Enable {
        source: String,
        #[arg(long)]
        json: bool,
    },
    /// Hide a source's content from retrieval and stop syncing it; keeps it.
    Disable {
        source: String,
        #[arg(long)]
        json: bool,
    },
    /// Sync a source now (or, with --full and no source, re-embed everything).
    Reindex {
        source: Option<String>,
        /// Re-embed unchanged documents too and re-stamp the corpus fingerprint.
        #[arg(long)]
        full: bool,
        #[arg(long)]
        json: bool,
    },
    /// Delete a source with its documents and chunks.
    Rm {
        source: String,
        #[arg(long)]
        json: bool,
    },
}
