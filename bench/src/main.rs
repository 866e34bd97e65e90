//! Kybernetes benchmarks (`make bench`). Each prints its figures with the machine's core
//! count and the command line, as markdown ready for BENCHMARKS.md.
//!
//! Usage: `kyb-bench storage [--quick] [--embedded-only]`, `kyb-bench apiserver [--quick]`,
//! `kyb-bench scheduler [--quick] [--workload a|b|c]…`,
//! `kyb-bench controllers [--quick]`, `kyb-bench lists [--quick]` (JSON against protobuf),
//! `kyb-bench apf [--quick]`, `kyb-bench pods [--quick]` (as root: pods on a real containerd)

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod apiserver;
mod controllers;
mod flowcontrol;
mod http;
mod lists;
mod pods;
mod scheduler;
mod stats;
mod storage;
mod streaming;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("# command: kyb-bench {}", args.join(" "));
    println!("# cores: {cores}");
    match args.first().map(String::as_str) {
        Some("storage") => storage::run(quick, args.iter().any(|a| a == "--embedded-only")),
        Some("apiserver") => apiserver::run(quick),
        Some("controllers") => controllers::run(quick),
        Some("lists") => lists::run(quick),
        Some("apf") => flowcontrol::run(quick),
        Some("pods") => pods::run(quick),
        Some("streaming") => streaming::run(quick),
        Some("scheduler") => {
            let chosen: Vec<&str> = args
                .windows(2)
                .filter(|w| w[0] == "--workload")
                .map(|w| w[1].as_str())
                .collect();
            scheduler::run(quick, &chosen)
        }
        _ => anyhow::bail!(
            "usage: kyb-bench storage|apiserver|scheduler|controllers|lists|apf|pods|streaming [--quick] [--embedded-only] [--workload a|b|c]"
        ),
    }
}
