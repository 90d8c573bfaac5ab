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
}
