//! `lore`: the server and its admin commands.

use clap::Parser;
use lore_server::cli::{Cli, Command};
use lore_server::{config, serve, telemetry};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let settings = config::load(cli.config.as_deref())?;
    telemetry::init(settings.log_format);
    match cli.command {
        Command::Serve => serve::run_from_cli(settings).await,
        Command::Migrate { json } => serve::migrate_from_cli(settings, json).await,
        Command::Config { json } => {
            println!("{}", config::render(&settings, json));
            Ok(())
        }
    }
}
