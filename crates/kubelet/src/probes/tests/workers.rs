//! The probe manager and its workers on tokio's paused clock: periods, initial delays,
//! thresholds, startup gating, liveness restarts, readiness resets, jitter.

use super::*;
use crate::probes::{FailedProbe, ProbeKind, ProbeManager};
use k8s_openapi::api::core::v1::{ExecAction, PodSpec, Probe};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

const UID: &str = "uid-1";

/// An exec probe running `program` (the fake runtime answers per container ID).
fn probe(program: &str, period: i32, failure_threshold: i32) -> Probe {
    Probe {
        exec: Some(ExecAction {
            command: Some(vec![program.into()]),
        }),
        period_seconds: Some(period),
        failure_threshold: Some(failure_threshold),
        success_threshold: Some(1),
        timeout_seconds: Some(1),
        ..Default::default()
    }
}

fn pod(container: Container) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            uid: Some(UID.into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![container],
            ..Default::default()
        }),
        ..Default::default()
    }
}

struct Fixture {
    exec: Arc<FakeExec>,
    events: Arc<RecordedEvents>,
    manager: ProbeManager,
}

/// A manager started long enough ago that its workers start without jitter.
async fn fixture() -> Fixture {
    let exec = Arc::new(FakeExec::default());
    let events = Arc::new(RecordedEvents::default());
    let manager = ProbeManager::new(exec.clone(), events.clone());
    tokio::time::advance(Duration::from_secs(3600)).await;
    Fixture {
        exec,
        events,
        manager,
    }
}

#[test]
fn the_manager_can_be_shared_between_tasks() {
    fn shared<T: Send + Sync + 'static>() {}
    shared::<ProbeManager>();
    shared::<crate::probes::CriExec>();
}

/// Lets the paused clock run `secs` seconds (the workers' timers fire on the way).
async fn run_for(secs: u64) {
    tokio::time::sleep(Duration::from_secs(secs)).await;
}

#[tokio::test(start_paused = true)]
async fn liveness_failures_past_the_threshold_restart_the_container_once() {
    let f = fixture().await;
    let mut live = probe("live", 10, 3);
    live.termination_grace_period_seconds = Some(7);
    let pod = pod(Container {
        name: "app".into(),
        liveness_probe: Some(live),
        ..Default::default()
    });
    let mut updates = f.manager.subscribe();
    f.exec.set("c1", Behaviour::Exit(1, "", "dead"));
    f.manager
        .container_started(&pod, "app", "c1", Instant::now(), None);
    assert_eq!(updates.recv().await.as_deref(), Some(UID));

    // Probes at 0 s and 10 s fail below the threshold.
    run_for(15).await;
    assert_eq!(f.exec.calls_of("live").len(), 2);
    assert!(f.manager.take_failed_liveness(UID).is_empty());
    // The third, at 20 s, reaches it.
    run_for(10).await;
    assert_eq!(f.exec.calls_of("live").len(), 3);
    assert_eq!(
        f.events.messages("Unhealthy", "app"),
        vec!["Liveness probe failed: dead"; 3]
    );
    assert_eq!(updates.recv().await.as_deref(), Some(UID));
    assert_eq!(
        f.manager.take_failed_liveness(UID),
        vec![FailedProbe {
            container: "app".into(),
            container_id: "c1".into(),
            kind: ProbeKind::Liveness,
            message: "Container app failed liveness probe, will be restarted".into(),
            grace_period_seconds: Some(7),
        }]
    );
    assert!(
        f.manager.take_failed_liveness(UID).is_empty(),
        "reported once"
    );

    // The worker holds until the next instance.
    run_for(60).await;
    assert_eq!(f.exec.calls_of("live").len(), 3);
    f.manager.container_stopped(UID, "app");
    f.manager
        .container_started(&pod, "app", "c2", Instant::now(), None);
    // Liveness waits for its next tick (90 s).
    run_for(11).await;
    let calls = f.exec.calls_of("live");
    assert_eq!(calls.len(), 4);
    assert_eq!(calls[3].container_id, "c2");
}

#[tokio::test(start_paused = true)]
async fn readiness_follows_its_thresholds_and_resets_on_restart() {
    let f = fixture().await;
    let mut ready = probe("ready", 5, 2);
    ready.success_threshold = Some(2);
    let pod = pod(Container {
        name: "app".into(),
        readiness_probe: Some(ready),
        ..Default::default()
    });
    f.manager
        .container_started(&pod, "app", "c1", Instant::now(), None);
    assert!(!f.manager.readiness(UID, "app"), "not ready before a probe");
    assert!(f.manager.started(UID, "app"), "no startup probe");

    // Two successes are needed: at 0 s and 5 s.
    run_for(1).await;
    assert!(!f.manager.readiness(UID, "app"));
    run_for(5).await;
    assert!(f.manager.readiness(UID, "app"));

    // One failure (10 s) is below the threshold, the second (15 s) is not.
    f.exec.set("c1", Behaviour::Exit(1, "not yet", ""));
    run_for(5).await;
    assert!(f.manager.readiness(UID, "app"));
    run_for(5).await;
    assert!(!f.manager.readiness(UID, "app"));
    assert_eq!(
        f.events.messages("Unhealthy", "app"),
        vec!["Readiness probe failed: not yet"; 2]
    );

    // A new instance starts unready and is probed at once.
    f.exec.set("c1", Behaviour::Exit(0, "", ""));
    run_for(10).await;
    assert!(f.manager.readiness(UID, "app"));
    let before = f.exec.calls_of("ready").len();
    f.manager.container_stopped(UID, "app");
    assert!(!f.manager.readiness(UID, "app"));
    f.manager
        .container_started(&pod, "app", "c2", Instant::now(), None);
    assert!(!f.manager.readiness(UID, "app"));
    tokio::task::yield_now().await;
    run_for(0).await;
    let calls = f.exec.calls_of("ready");
    assert_eq!(calls.len(), before + 1);
    assert_eq!(calls[before].container_id, "c2");
    assert_eq!(calls[before].at, Instant::now());
}

#[tokio::test(start_paused = true)]
async fn initial_delay_holds_the_first_probe() {
    let f = fixture().await;
    let mut ready = probe("ready", 10, 3);
    ready.initial_delay_seconds = Some(15);
    let pod = pod(Container {
        name: "app".into(),
        readiness_probe: Some(ready),
        ..Default::default()
    });
    let start = Instant::now();
    f.manager.container_started(&pod, "app", "c1", start, None);
    run_for(19).await;
    assert!(f.exec.calls_of("ready").is_empty());
    assert!(!f.manager.readiness(UID, "app"));
    // The first tick after the delay: 20 s.
    run_for(2).await;
    let calls = f.exec.calls_of("ready");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].at - start, Duration::from_secs(20));
    assert!(f.manager.readiness(UID, "app"));
}

#[tokio::test(start_paused = true)]
async fn startup_probe_gates_liveness_and_readiness() {
    let f = fixture().await;
    let pod = pod(Container {
        name: "app".into(),
        startup_probe: Some(probe("startup", 10, 30)),
        // Ticks apart from the startup probe's success at 40 s: 45 s and 42 s.
        liveness_probe: Some(probe("live", 9, 3)),
        readiness_probe: Some(probe("ready", 7, 3)),
        ..Default::default()
    });
    f.exec.set("c1", Behaviour::Exit(1, "starting", ""));
    let mut updates = f.manager.subscribe();
    f.manager
        .container_started(&pod, "app", "c1", Instant::now(), None);
    assert_eq!(updates.recv().await.as_deref(), Some(UID));
    run_for(35).await;
    assert_eq!(f.exec.calls_of("startup").len(), 4);
    assert!(f.exec.calls_of("live").is_empty());
    assert!(f.exec.calls_of("ready").is_empty());
    assert!(!f.manager.started(UID, "app"));
    assert!(!f.manager.readiness(UID, "app"));
    assert_eq!(
        f.events.messages("Unhealthy", "app"),
        vec!["Startup probe failed: starting"; 4]
    );

    // Started at 40 s: readiness is probed at once, liveness from its next tick.
    f.exec.set("c1", Behaviour::Exit(0, "", ""));
    run_for(6).await;
    assert!(f.manager.started(UID, "app"));
    assert!(f.manager.readiness(UID, "app"));
    assert_eq!(updates.recv().await.as_deref(), Some(UID));
    let ready = f.exec.calls_of("ready");
    assert_eq!(ready.len(), 1);
    assert_eq!(ready[0].at, f.exec.calls_of("startup")[4].at);
    run_for(10).await;
    assert_eq!(f.exec.calls_of("live").len(), 1);
    assert_eq!(
        f.exec.calls_of("startup").len(),
        5,
        "startup stops once started"
    );
}

#[tokio::test(start_paused = true)]
async fn startup_failures_past_the_threshold_restart_the_container() {
    let f = fixture().await;
    let pod = pod(Container {
        name: "app".into(),
        startup_probe: Some(probe("startup", 5, 2)),
        liveness_probe: Some(probe("live", 5, 1)),
        ..Default::default()
    });
    f.exec.set("c1", Behaviour::Exit(1, "", ""));
    f.manager
        .container_started(&pod, "app", "c1", Instant::now(), None);
    run_for(6).await;
    let failed = f.manager.take_failed_liveness(UID);
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].kind, ProbeKind::Startup);
    assert_eq!(
        failed[0].message,
        "Container app failed startup probe, will be restarted"
    );
    assert_eq!(failed[0].grace_period_seconds, None);
    assert!(f.exec.calls_of("live").is_empty());
}

#[tokio::test(start_paused = true)]
async fn errors_are_retried_and_do_not_count_as_failures() {
    let f = fixture().await;
    let pod = pod(Container {
        name: "app".into(),
        liveness_probe: Some(probe("live", 10, 1)),
        ..Default::default()
    });
    f.exec.set("c1", Behaviour::Fails("container is stopping"));
    f.manager
        .container_started(&pod, "app", "c1", Instant::now(), None);
    run_for(15).await;
    // Two rounds of three attempts each.
    assert_eq!(f.exec.calls_of("live").len(), 6);
    assert_eq!(
        f.events.messages("Unhealthy", "app"),
        vec!["Liveness probe errored and resulted in unknown state: container is stopping"; 2]
    );
    assert!(f.manager.take_failed_liveness(UID).is_empty());
}

#[tokio::test(start_paused = true)]
async fn containers_without_probes_are_ready_while_running() {
    let f = fixture().await;
    let pod = pod(Container {
        name: "app".into(),
        ..Default::default()
    });
    assert!(!f.manager.readiness(UID, "app"), "unknown container");
    f.manager
        .container_started(&pod, "app", "c1", Instant::now(), None);
    assert!(f.manager.readiness(UID, "app"));
    assert!(f.manager.started(UID, "app"));
    f.manager.container_stopped(UID, "app");
    assert!(!f.manager.readiness(UID, "app"));
    assert!(!f.manager.started(UID, "app"));
}

#[tokio::test(start_paused = true)]
async fn removed_and_terminating_pods_stop_probing() {
    let f = fixture().await;
    let pod = pod(Container {
        name: "app".into(),
        liveness_probe: Some(probe("live", 10, 3)),
        readiness_probe: Some(probe("ready", 10, 3)),
        ..Default::default()
    });
    f.manager
        .container_started(&pod, "app", "c1", Instant::now(), None);
    run_for(5).await;
    assert_eq!(f.exec.calls_of("live").len(), 1);
    f.manager.pod_terminating(UID);
    run_for(20).await;
    assert_eq!(f.exec.calls_of("live").len(), 1, "liveness stops");
    assert_eq!(f.exec.calls_of("ready").len(), 3, "readiness goes on");

    f.manager.remove_pod(UID);
    run_for(60).await;
    assert_eq!(f.exec.calls_of("ready").len(), 3);
    assert!(!f.manager.readiness(UID, "app"));
}

#[tokio::test(start_paused = true)]
async fn workers_of_a_fresh_agent_start_within_one_period() {
    let exec = Arc::new(FakeExec::default());
    let manager = ProbeManager::new(exec.clone(), Arc::new(RecordedEvents::default()));
    let pod = pod(Container {
        name: "app".into(),
        liveness_probe: Some(probe("live", 10, 3)),
        ..Default::default()
    });
    let start = Instant::now();
    manager.container_started(&pod, "app", "c1", start, None);
    run_for(10).await;
    let calls = exec.calls_of("live");
    assert!(!calls.is_empty());
    assert!(calls[0].at - start < Duration::from_secs(10));
}
