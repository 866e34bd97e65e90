//! `kyb`: every Kybernetes component in one binary. This crate only parses flags and wires
//! components together; the components live in their own crates.

// Allocation-heavy request handling (JSON, watch fan-out) runs measurably faster on it.
// The `system-allocator` feature leaves the C allocator in place, for heap profilers
// (heaptrack) that follow malloc.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cli;
mod controller_manager;
mod identities;
mod image;
mod kubelet;
mod logging;
mod scheduler;
mod server;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = cli::Cli::parse();
    logging::init(cli.log_level.as_deref());
    let outcome = match cli.command {
        cli::Command::Version => {
            println!("kyb {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        cli::Command::Server(args) => run_async(server::run(args, cli.data_dir, true)),
        cli::Command::Apiserver(args) => run_async(server::run(args, cli.data_dir, false)),
        cli::Command::Scheduler(args) => run_async(scheduler::run(args)),
        cli::Command::ControllerManager(args) => run_async(controller_manager::run(args)),
        cli::Command::Kubelet(args) => run_async(kubelet::run(args, cli.data_dir)),
        cli::Command::Image(args) => image::run(args, cli.data_dir),
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            // `{:#}` prints the whole chain of context: "opening the store: …: …".
            tracing::error!("{error:#}");
            eprintln!("kyb: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run_async(future: impl std::future::Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("kyb")
        .build()?
        .block_on(future)
}
