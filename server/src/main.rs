//! `lore`: the server and its admin commands.

use std::process::ExitCode;

use clap::Parser;
use lore_server::cli::{BenchCommand, Cli, Command, RollupsCommand};
use lore_server::commands::{self, output};
use lore_server::{bench, config, serve, telemetry};

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let json = cli.command.json();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        // Under --json, stdout holds one JSON document, the error included.
        Err(err) if json => {
            output::print_json(&output::error_body(&err));
            ExitCode::FAILURE
        }
        Err(err) => {
            eprintln!("Error: {err:?}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let settings = config::load(cli.config.as_deref())?;
    telemetry::init(settings.log_format);
    match cli.command {
        Command::Serve => serve::run_from_cli(settings, cli.config.clone()).await,
        Command::Migrate { json } => serve::migrate_from_cli(settings, json).await,
        Command::Config { json } => {
            println!("{}", config::render(&settings, json));
            Ok(())
        }
        Command::Sources { command } => commands::sources::run(settings, command).await,
        Command::Ingest { target, name, json } => commands::ingest::run(settings, &target, name, json).await,
        Command::Providers { command } => commands::providers::run(settings, command).await,
        Command::Keys { command } => commands::keys::run(settings, command).await,
        Command::Schema { command } => commands::schema::run(settings, command).await,
        Command::Users { command } => commands::users::run_users(settings, command).await,
        Command::Roles { command } => commands::users::run_roles(settings, command).await,
        Command::Ask { question, answer_as, json, rate, comment } => {
            let rate = rate.map(|verdict| commands::ask::Rate { verdict, comment });
            commands::ask::run(settings, &question, answer_as.as_deref(), json, rate).await
        }
        Command::Evals { command } => commands::evals::run(settings, command).await,
        Command::Rollups { command: RollupsCommand::Rebuild { json } } => {
            commands::rollups::rebuild(settings, json).await
        }
        Command::Search { query, top_k, answer_as, json } => {
            commands::search::run(settings, &query, top_k, answer_as.as_deref(), json).await
        }
        Command::Bench { command: BenchCommand::Embed { chunks, peers_python, peers_script, onnx, out } } => {
            let peers = match (peers_python, peers_script, onnx) {
                (Some(python), Some(script), Some(onnx)) => Some(bench::Peers { python, script, onnx }),
                _ => None,
            };
            bench::embed(settings, chunks, peers, out).await
        }
        Command::Bench { command: BenchCommand::Index { git: true, files, updates, out, .. } } => {
            bench::git_source(settings, bench::GitOptions { files, commits: updates, out }).await
        }
        Command::Bench { command: BenchCommand::Index { table: true, rows, updates, out, .. } } => {
            bench::table(settings, bench::TableOptions { rows, updates, out }).await
        }
        Command::Bench { command: BenchCommand::Index { pages, sizes, out, .. } } => {
            bench::index(settings, pages, sizes, out).await
        }
        Command::Bench {
            command:
                BenchCommand::Operations {
                    records,
                    requests,
                    postgres_url,
                    harperdb_url,
                    harperdb_rest_url,
                    harperdb_user,
                    harperdb_password,
                    out,
                },
        } => {
            let options = bench::OperationsOptions {
                records,
                requests,
                postgres_url,
                harperdb_url,
                harperdb_rest_url,
                harperdb_user,
                harperdb_password,
                out,
            };
            bench::operations(settings, options).await
        }
        Command::Bench { command: BenchCommand::Mcp { requests, tables, sessions, changes, pages, out } } => {
            let options = bench::McpOptions { requests, tables, sessions, changes, pages, out };
            bench::mcp(settings, options).await
        }
        Command::Bench { command: BenchCommand::Dashboard { runs, out } } => {
            bench::dashboard(settings, runs, out).await
        }
        Command::Bench {
            command: BenchCommand::Answer { llm_endpoint, llm_model, pages, chunks, requests, out },
        } => {
            let options = bench::AnswerOptions { pages, chunks, requests, llm_endpoint, llm_model, out };
            bench::answer(settings, options).await
        }
        Command::Bench {
            command:
                BenchCommand::Replicas {
                    llm_endpoint,
                    llm_model,
                    postgres_url,
                    s3_endpoint,
                    pages,
                    requests,
                    clients,
                    out,
                },
        } => {
            let options = bench::ReplicasOptions {
                pages,
                requests,
                clients,
                llm_endpoint,
                llm_model,
                postgres_url,
                s3_endpoint,
                out,
            };
            bench::replicas(settings, options).await
        }
        Command::Bench {
            command:
                BenchCommand::Quality { set, llm_endpoint, llm_model, docs, limit, paraphrase_similarity, out },
        } => {
            let docs = docs.unwrap_or_else(|| set.default_docs());
            let options = bench::QualityOptions {
                set,
                docs,
                llm_endpoint,
                llm_model,
                limit,
                paraphrase_similarity,
                out,
            };
            bench::quality(settings, options).await
        }
        Command::Bench {
            command: BenchCommand::Rerank { rerank_endpoint, rerank_model, candidates, docs, out },
        } => {
            let options = bench::RerankOptions { docs, rerank_endpoint, rerank_model, candidates, out };
            bench::rerank(settings, options).await
        }
        Command::Bench {
            command:
                BenchCommand::Retrieval {
                    sizes,
                    docs,
                    real,
                    queries,
                    requests,
                    cache,
                    peers_python,
                    peers_script,
                    out,
                },
        } => {
            let peers = peers_python.zip(peers_script);
            let options = bench::RetrievalOptions { sizes, docs, real, queries, requests, cache, peers, out };
            bench::retrieval(settings, options).await
        }
        Command::Bench { command: BenchCommand::Generate { model, llama_server, tokens, runs, out } } => {
            bench::generate(settings, bench::GenerateOptions { model, llama_server, tokens, runs, out }).await
        }
    }
}
