//! The supervisor on tokio's paused clock: timers fire at once and in order, so start
//! order, backoff delays and stop deadlines are exact without real sleeping.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::component::{from_fn, once};
use std::sync::Mutex;

/// What the test components did, in order.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<(String, Instant)>>>);

impl Log {
    fn push(&self, line: String) {
        self.0.lock().unwrap().push((line, Instant::now()));
    }

    fn lines(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(l, _)| l.clone())
            .collect()
    }

    fn at(&self, line: &str) -> Instant {
        self.0
            .lock()
            .unwrap()
            .iter()
            .find(|(l, _)| l == line)
            .map(|(_, at)| *at)
            .unwrap_or_else(|| panic!("{line} not logged"))
    }
}

/// A component ready after `startup` that runs until it is cancelled.
fn steady(name: &'static str, log: &Log, startup: Duration) -> impl Component {
    let log = log.clone();
    from_fn(name, move |ctx| {
        let log = log.clone();
        async move {
            log.push(format!("{name} start"));
            tokio::time::sleep(startup).await;
            log.push(format!("{name} ready"));
            ctx.ready();
            ctx.cancelled().await;
            log.push(format!("{name} stop"));
            Ok(())
        }
    })
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Runs `supervisor` while `drive` runs, then shuts it down; what the supervisor returned.
async fn supervise_while(
    supervisor: Supervisor,
    drive: impl Future<Output = ()>,
) -> Result<(), Error> {
    let stop = CancellationToken::new();
    let drive = async {
        drive.await;
        stop.cancel();
    };
    let (result, ()) = tokio::join!(supervisor.run(stop.cancelled()), drive);
    result
}

/// Waits (on the paused clock) until `condition` holds.
async fn until(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + secs(3600);
    while !condition() {
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn all_ready(health: &Health) -> bool {
    health.checks(Probe::Ready).iter().all(|(_, s)| s.is_ok())
}

#[tokio::test(start_paused = true)]
async fn starts_in_order_each_after_the_previous_is_ready_and_stops_in_reverse() {
    let log = Log::default();
    let health = Health::new();
    let mut supervisor = Supervisor::new(health.clone());
    supervisor
        .essential(steady("a", &log, secs(3)))
        .restartable(steady("b", &log, secs(1)))
        .restartable(steady("c", &log, secs(2)));
    supervise_while(supervisor, async {
        until("b started", || log.lines().contains(&"b start".into())).await;
        assert_eq!(
            health.get("component/c", Probe::Ready),
            Some(State::failed("not started"))
        );
        assert_eq!(
            health.get("component/b", Probe::Ready),
            Some(State::failed("starting"))
        );
        assert_eq!(health.get("component/a", Probe::Ready), Some(State::Ok));
        until("all ready", || all_ready(&health)).await;
        assert_eq!(
            health
                .checks(Probe::Ready)
                .into_iter()
                .map(|(name, _)| name)
                .collect::<Vec<_>>(),
            ["component/a", "component/b", "component/c", "shutdown"]
        );
        assert!(health.checks(Probe::Live).iter().all(|(_, s)| s.is_ok()));
    })
    .await
    .unwrap();
    assert_eq!(
        log.lines(),
        [
            "a start", "a ready", "b start", "b ready", "c start", "c ready", "c stop", "b stop",
            "a stop"
        ]
    );
    assert_eq!(log.at("b start") - log.at("a start"), secs(3));
    assert_eq!(
        health.get(SHUTDOWN_CHECK, Probe::Ready),
        Some(State::failed("shutting down"))
    );
    assert_eq!(
        health.get("component/a", Probe::Ready),
        Some(State::failed("stopped"))
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_component_restarts_with_doubling_delays_reset_after_a_healthy_run() {
    let log = Log::default();
    let health = Health::new();
    let runs = Arc::new(Mutex::new(0u32));
    let component = {
        let log = log.clone();
        from_fn("flaky", move |ctx| {
            let log = log.clone();
            let runs = runs.clone();
            async move {
                let run = {
                    let mut runs = runs.lock().unwrap();
                    *runs += 1;
                    *runs
                };
                log.push(format!("start {run}"));
                let outcome = match run {
                    1..=7 => Err(anyhow::anyhow!("boom {run}")),
                    8 => {
                        ctx.ready();
                        tokio::time::sleep(secs(61)).await;
                        Err(anyhow::anyhow!("lost after a healthy minute"))
                    }
                    9 => {
                        ctx.ready();
                        tokio::time::sleep(secs(1)).await;
                        Err(anyhow::anyhow!("lost at once"))
                    }
                    _ => {
                        ctx.ready();
                        ctx.cancelled().await;
                        Ok(())
                    }
                };
                log.push(format!("exit {run}"));
                outcome
            }
        })
    };
    let mut supervisor = Supervisor::new(health.clone());
    supervisor.restartable(component);
    supervise_while(supervisor, async {
        until("the first failure", || {
            log.lines().contains(&"exit 1".into())
        })
        .await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(
            health.get("component/flaky", Probe::Live),
            Some(State::failed("boom 1"))
        );
        assert_eq!(
            health.get("component/flaky", Probe::Ready),
            Some(State::failed("boom 1"))
        );
        until("the tenth run", || log.lines().contains(&"start 10".into())).await;
        until("ready again", || all_ready(&health)).await;
    })
    .await
    .unwrap();
    let delays: Vec<u64> = (1..=9)
        .map(|run| {
            let delay = log.at(&format!("start {}", run + 1)) - log.at(&format!("exit {run}"));
            delay.as_secs_f64().round() as u64
        })
        .collect();
    assert_eq!(delays, [1, 2, 4, 8, 16, 30, 30, 1, 2]);
}

#[tokio::test(start_paused = true)]
async fn an_essential_failure_stops_the_others_and_is_returned() {
    let log = Log::default();
    let mut supervisor = Supervisor::new(Health::new());
    let apiserver = {
        let log = log.clone();
        once("apiserver", move |ctx| async move {
            log.push("apiserver start".into());
            ctx.ready();
            tokio::time::sleep(secs(5)).await;
            log.push("apiserver fails".into());
            Err(anyhow::anyhow!("disk gone")).map_err(|e| e.context("serving"))
        })
    };
    supervisor
        .essential(apiserver)
        .restartable(steady("scheduler", &log, secs(1)));
    let error = supervisor.run(std::future::pending()).await.unwrap_err();
    let Error::Failed { component, source } = &error;
    assert_eq!(component, "apiserver");
    assert_eq!(error.to_string(), "apiserver failed");
    assert_eq!(source.to_string(), "serving");
    assert_eq!(
        std::error::Error::source(&**source).map(ToString::to_string),
        Some("disk gone".to_string())
    );
    assert_eq!(
        log.lines(),
        [
            "apiserver start",
            "scheduler start",
            "scheduler ready",
            "apiserver fails",
            "scheduler stop"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_component_failing_before_it_is_ready_does_not_hold_back_the_next() {
    let log = Log::default();
    let health = Health::new();
    let mut supervisor = Supervisor::new(health.clone());
    supervisor
        .restartable(from_fn("broken", |_ctx| async {
            anyhow::bail!("no kubeconfig")
        }))
        .restartable(steady("next", &log, secs(1)));
    supervise_while(supervisor, async {
        until("next ready", || log.lines().contains(&"next ready".into())).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(health.get("component/next", Probe::Ready), Some(State::Ok));
        assert!(
            !health
                .get("component/broken", Probe::Ready)
                .unwrap()
                .is_ok()
        );
    })
    .await
    .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_panic_is_a_failure_and_the_component_restarts() {
    let log = Log::default();
    let health = Health::new();
    let panicked = Arc::new(Mutex::new(false));
    let component = {
        let log = log.clone();
        from_fn("panicky", move |ctx| {
            let log = log.clone();
            let panicked = panicked.clone();
            async move {
                log.push("start".into());
                if !std::mem::replace(&mut *panicked.lock().unwrap(), true) {
                    panic!("index out of bounds");
                }
                ctx.ready();
                ctx.cancelled().await;
                Ok(())
            }
        })
    };
    let mut supervisor = Supervisor::new(health.clone());
    supervisor.restartable(component);
    supervise_while(supervisor, async {
        until("the restart", || log.lines().len() == 2).await;
        until("ready", || all_ready(&health)).await;
    })
    .await
    .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_component_that_ignores_cancellation_is_aborted_after_the_stop_deadline() {
    let log = Log::default();
    let mut supervisor = Supervisor::new(Health::new()).stop_timeout(secs(2));
    supervisor
        .essential(steady("first", &log, secs(0)))
        .restartable(from_fn("stubborn", |ctx| async move {
            ctx.ready();
            std::future::pending::<()>().await;
            Ok(())
        }));
    let stop = CancellationToken::new();
    let drive = async {
        until("first ready", || {
            log.lines().contains(&"first ready".into())
        })
        .await;
        stop.cancel();
        Instant::now()
    };
    let (result, cancelled_at) = tokio::join!(supervisor.run(stop.cancelled()), drive);
    result.unwrap();
    assert_eq!(log.at("first stop") - cancelled_at, secs(2));
}

#[tokio::test(start_paused = true)]
async fn shutdown_during_start_stops_what_was_started_and_no_more() {
    let log = Log::default();
    let mut supervisor = Supervisor::new(Health::new());
    supervisor
        .essential(steady("slow", &log, secs(10)))
        .restartable(steady("never", &log, secs(0)));
    let result = supervisor.run(tokio::time::sleep(secs(1))).await;
    result.unwrap();
    assert_eq!(log.lines(), ["slow start", "slow ready", "slow stop"]);
}

#[test]
fn backoff_doubles_to_the_maximum_and_resets_after_a_healthy_run() {
    let backoff = Backoff::default();
    assert_eq!(backoff.next(None, None), secs(1));
    assert_eq!(backoff.next(Some(secs(1)), None), secs(2));
    assert_eq!(backoff.next(Some(secs(16)), Some(secs(59))), secs(30));
    assert_eq!(backoff.next(Some(secs(30)), None), secs(30));
    assert_eq!(backoff.next(Some(secs(30)), Some(secs(60))), secs(1));
}
