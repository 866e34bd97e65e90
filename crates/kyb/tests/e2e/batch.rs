//! The batch controllers inside `kyb server`, with the fake kubelet finishing pods as their
//! templates say (`kyb.test/exit`): Jobs completing (NonIndexed and Indexed), failing at
//! their backoff limit or by a pod failure policy, suspended and resumed; finished Jobs
//! deleted after their TTL; CronJobs driven by a fake clock.

use crate::cluster::Cluster;
use crate::kubelet::{FakeKubelet, admin_client};
use crate::poll::{events_of, wait_for};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::time::Duration;

const SCHEDULED: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

fn job_manifest(name: &str, exit: Option<&str>, spec: Value) -> Job {
    let annotations = match exit {
        Some(code) => json!({"kyb.test/exit": code}),
        None => json!({}),
    };
    let mut manifest = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": {
            "metadata": {"annotations": annotations},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "busybox"}]}}},
    });
    if let (Some(target), Value::Object(extra)) = (manifest["spec"].as_object_mut(), spec) {
        target.extend(extra);
    }
    serde_json::from_value(manifest).unwrap()
}

fn condition(job: &Job, type_: &str) -> Option<(String, String, String)> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| {
            (
                c.status.clone(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

async fn wait_condition(jobs: &Api<Job>, name: &str, type_: &str) -> Job {
    wait_for(&format!("job {name} condition {type_}"), || async {
        let job = jobs.get(name).await.ok()?;
        condition(&job, type_)
            .filter(|c| c.0 == "True")
            .map(|_| job)
    })
    .await
}

/// Starts a cluster with a fake kubelet on one node and the `default` service account
/// pods need.
async fn start() -> (Cluster, kube::Client, FakeKubelet) {
    let cluster = Cluster::start();
    let client = admin_client(&cluster).await;
    let kubelet = FakeKubelet::start(client.clone(), &["node-1"]).await;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap();
    match accounts.create(&PostParams::default(), &account).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("creating the default service account: {e}"),
    }
    (cluster, client, kubelet)
}

async fn pods_of(client: &kube::Client, job: &str) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.list(&ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}")))
        .await
        .unwrap()
        .items
}

#[tokio::test]
async fn a_job_of_three_completions_two_at_a_time_completes() {
    let (_cluster, client, _kubelet) = start().await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    jobs.create(
        &PostParams::default(),
        &job_manifest("pi", Some("0"), json!({"completions": 3, "parallelism": 2})),
    )
    .await
    .unwrap();
    let most_active = std::cell::Cell::new(0);
    let job = wait_for("job pi to complete", || {
        let jobs = jobs.clone();
        let most_active = &most_active;
        async move {
            let job = jobs.get("pi").await.ok()?;
            let status = job.status.clone()?;
            most_active.set(most_active.get().max(status.active.unwrap_or(0)));
            condition(&job, "Complete")
                .filter(|c| c.0 == "True")
                .map(|_| job)
        }
    })
    .await;
    let most_active = most_active.get();
    assert!(
        most_active <= 2,
        "at most parallelism pods run: {most_active}"
    );
    let status = job.status.clone().unwrap();
    assert_eq!(status.succeeded, Some(3));
    assert_eq!(status.failed, None);
    assert!(status.completion_time.is_some() && status.start_time.is_some());
    assert_eq!(status.ready, Some(0));
    let complete = condition(&job, "Complete").unwrap();
    assert_eq!(complete.1, "CompletionsReached");
    assert_eq!(condition(&job, "SuccessCriteriaMet").unwrap().0, "True");
    let uncounted = status.uncounted_terminated_pods.unwrap_or_default();
    assert!(uncounted.succeeded.is_none() && uncounted.failed.is_none());

    // Three pods, labelled, owned, counted (no tracking finalizer left).
    let pods = wait_for("finalizers to be removed", || async {
        let pods = pods_of(&client, "pi").await;
        let tracked = pods.iter().any(|p| {
            p.metadata
                .finalizers
                .iter()
                .flatten()
                .any(|f| f == "batch.kubernetes.io/job-tracking")
        });
        (!tracked).then_some(pods)
    })
    .await;
    assert_eq!(pods.len(), 3);
    let uid = job.metadata.uid.clone().unwrap();
    for pod in &pods {
        let labels = pod.metadata.labels.clone().unwrap();
        assert_eq!(labels["batch.kubernetes.io/controller-uid"], uid);
        assert_eq!(labels["controller-uid"], uid);
        assert_eq!(labels["job-name"], "pi");
        let owner = &pod.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.controller), ("Job", Some(true)));
    }
    let events = wait_for("the Completed event", || async {
        let events = events_of(&client, "pi").await;
        events
            .iter()
            .any(|(reason, _)| reason == "Completed")
            .then_some(events)
    })
    .await;
    let created: Vec<_> = events
        .iter()
        .filter(|(r, m)| r == "SuccessfulCreate" && m.starts_with("Created pod: pi-"))
        .collect();
    assert_eq!(created.len(), 3, "{events:?}");
    assert!(events.contains(&("Completed".to_string(), "Job completed".to_string())));
}

#[tokio::test]
async fn a_failing_job_stops_at_its_backoff_limit() {
    let (_cluster, client, _kubelet) = start().await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    jobs.create(
        &PostParams::default(),
        &job_manifest("fails", Some("1"), json!({"backoffLimit": 1})),
    )
    .await
    .unwrap();
    let job = wait_condition(&jobs, "fails", "Failed").await;
    let failed = condition(&job, "Failed").unwrap();
    assert_eq!(failed.1, "BackoffLimitExceeded");
    assert_eq!(failed.2, "Job has reached the specified backoff limit");
    assert_eq!(
        condition(&job, "FailureTarget").unwrap().1,
        "BackoffLimitExceeded"
    );
    let status = job.status.unwrap();
    assert_eq!(status.failed, Some(2), "backoffLimit 1 allows one retry");
    assert_eq!(status.succeeded, None);
    assert!(status.completion_time.is_none());
    // The replacement waited out the 10 s backoff after the first failure.
    let pods = pods_of(&client, "fails").await;
    assert_eq!(pods.len(), 2);
    let mut created: Vec<_> = pods
        .iter()
        .map(|p| p.metadata.creation_timestamp.clone().unwrap().0)
        .collect();
    created.sort();
    let gap = created[1].duration_since(created[0]);
    assert!(
        gap >= k8s_openapi::jiff::SignedDuration::from_secs(9),
        "backoff gap {gap:?}"
    );
    wait_for("the BackoffLimitExceeded event", || async {
        let events = events_of(&client, "fails").await;
        events
            .iter()
            .any(|(reason, _)| reason == "BackoffLimitExceeded")
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_pod_failure_policy_fails_the_job_at_once() {
    let (_cluster, client, _kubelet) = start().await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let policy = json!({"podFailurePolicy": {"rules": [
        {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
    ]}, "backoffLimit": 6});
    jobs.create(
        &PostParams::default(),
        &job_manifest("fatal", Some("42"), policy),
    )
    .await
    .unwrap();
    let job = wait_condition(&jobs, "fatal", "Failed").await;
    let failed = condition(&job, "Failed").unwrap();
    assert_eq!(failed.1, "PodFailurePolicy");
    assert!(
        failed
            .2
            .starts_with("Container main for pod default/fatal-")
            && failed
                .2
                .ends_with("failed with exit code 42 matching FailJob rule at index 0"),
        "{}",
        failed.2
    );
    assert_eq!(job.status.unwrap().failed, Some(1));
    assert_eq!(pods_of(&client, "fatal").await.len(), 1);
}

#[tokio::test]
async fn an_indexed_job_runs_each_index_once() {
    let (_cluster, client, _kubelet) = start().await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    jobs.create(
        &PostParams::default(),
        &job_manifest(
            "idx",
            Some("0"),
            json!({"completions": 3, "parallelism": 3, "completionMode": "Indexed"}),
        ),
    )
    .await
    .unwrap();
    let job = wait_condition(&jobs, "idx", "Complete").await;
    let status = job.status.unwrap();
    assert_eq!(status.completed_indexes.as_deref(), Some("0-2"));
    assert_eq!(status.succeeded, Some(3));
    let pods = pods_of(&client, "idx").await;
    assert_eq!(pods.len(), 3);
    let mut seen: Vec<(String, String)> = pods
        .iter()
        .map(|p| {
            let index = p.metadata.annotations.as_ref().unwrap()
                ["batch.kubernetes.io/job-completion-index"]
                .clone();
            assert_eq!(
                p.metadata.labels.as_ref().unwrap()["batch.kubernetes.io/job-completion-index"],
                index
            );
            assert!(
                p.metadata
                    .name
                    .as_ref()
                    .unwrap()
                    .starts_with(&format!("idx-{index}-"))
            );
            (index, p.spec.as_ref().unwrap().hostname.clone().unwrap())
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [("0", "idx-0"), ("1", "idx-1"), ("2", "idx-2")]
            .map(|(a, b)| (a.to_string(), b.to_string()))
    );
}

#[tokio::test]
async fn suspending_a_job_removes_its_pods_and_resuming_brings_them_back() {
    let (_cluster, client, _kubelet) = start().await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    jobs.create(
        &PostParams::default(),
        &job_manifest(
            "sleepy",
            None,
            json!({"parallelism": 2, "completions": 4, "suspend": true}),
        ),
    )
    .await
    .unwrap();
    let job = wait_condition(&jobs, "sleepy", "Suspended").await;
    assert_eq!(condition(&job, "Suspended").unwrap().1, "JobSuspended");
    assert!(pods_of(&client, "sleepy").await.is_empty());
    assert!(job.status.unwrap().start_time.is_none());

    let resume = json!({"spec": {"suspend": false}});
    jobs.patch("sleepy", &PatchParams::default(), &Patch::Merge(&resume))
        .await
        .unwrap();
    let job = wait_for("two ready pods", || async {
        let job = jobs.get("sleepy").await.ok()?;
        let status = job.status.clone()?;
        (status.active == Some(2) && status.ready == Some(2)).then_some(job)
    })
    .await;
    let resumed = condition(&job, "Suspended").unwrap();
    assert_eq!(
        (resumed.0.as_str(), resumed.1.as_str()),
        ("False", "JobResumed")
    );
    assert!(job.status.unwrap().start_time.is_some());

    let suspend = json!({"spec": {"suspend": true}});
    jobs.patch("sleepy", &PatchParams::default(), &Patch::Merge(&suspend))
        .await
        .unwrap();
    let job = wait_condition(&jobs, "sleepy", "Suspended").await;
    wait_for("the pods to be deleted", || async {
        let pods = pods_of(&client, "sleepy").await;
        pods.iter()
            .all(|p| p.metadata.deletion_timestamp.is_some())
            .then_some(())
    })
    .await;
    let status = wait_for("no active pods", || async {
        let status = jobs.get("sleepy").await.ok()?.status?;
        (status.active.is_none()).then_some(status)
    })
    .await;
    assert_eq!(
        status.failed, None,
        "pods removed by suspension are not failures"
    );
    assert_eq!(condition(&job, "Suspended").unwrap().1, "JobSuspended");
    // Events are written asynchronously.
    wait_for("the suspend, resume and delete events", || async {
        let events = events_of(&client, "sleepy").await;
        let has = |reason: &str, message: &str| {
            events
                .iter()
                .any(|(r, m)| r == reason && m.starts_with(message))
        };
        (has("Suspended", "Job suspended")
            && has("Resumed", "Job resumed")
            && has("SuccessfulDelete", "Deleted pod: sleepy-"))
        .then_some(())
    })
    .await;
}

#[tokio::test]
async fn finished_jobs_are_deleted_after_their_ttl() {
    let (_cluster, client, _kubelet) = start().await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    jobs.create(
        &PostParams::default(),
        &job_manifest("brief", Some("0"), json!({"ttlSecondsAfterFinished": 2})),
    )
    .await
    .unwrap();
    jobs.create(
        &PostParams::default(),
        &job_manifest("kept", Some("0"), json!({"ttlSecondsAfterFinished": 3600})),
    )
    .await
    .unwrap();
    let job = wait_condition(&jobs, "brief", "Complete").await;
    let finished = job.status.unwrap().completion_time.unwrap().0;
    wait_for("job brief to be deleted", || async {
        jobs.get_opt("brief").await.unwrap().is_none().then_some(())
    })
    .await;
    let gone = k8s_openapi::jiff::Timestamp::now();
    assert!(
        gone.duration_since(finished) >= k8s_openapi::jiff::SignedDuration::from_secs(1),
        "deleted only after the TTL"
    );
    wait_condition(&jobs, "kept", "Complete").await;
    assert!(jobs.get_opt("kept").await.unwrap().is_some());
}

/// A cluster whose CronJobs are run by a controller in this process, on a fake clock.
async fn start_cron() -> (
    Cluster,
    kube::Client,
    FakeKubelet,
    std::sync::Arc<kyb_controllers::clock::FakeClock>,
) {
    let dir = kyb_testkit::temp_dir("cluster").unwrap();
    let cluster = Cluster::start_with(dir, &["--controllers=*,-cronjob-controller"]);
    let client = admin_client(&cluster).await;
    let kubelet = FakeKubelet::start(client.clone(), &["node-1"]).await;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap();
    let _ = accounts.create(&PostParams::default(), &account).await;
    // An hour back: nothing is due until a test sets the clock (see `begin`).
    let start = k8s_openapi::jiff::Timestamp::from_second(
        k8s_openapi::jiff::Timestamp::now().as_second() - 3600,
    )
    .unwrap();
    let clock = std::sync::Arc::new(kyb_controllers::clock::FakeClock::new(start));
    let mut config = kyb_controllers::manager::Config::new(kyb_controllers::options::Options {
        controllers: vec!["cronjob-controller".into()],
        ..Default::default()
    });
    config.clock = clock.clone();
    let clients = kyb_controllers::credentials::Clients::shared(client.clone());
    tokio::spawn(kyb_controllers::manager::run(
        clients,
        config,
        std::future::pending(),
    ));
    (cluster, client, kubelet, clock)
}

fn cronjob_manifest(name: &str, exit: Option<&str>, spec: Value) -> CronJob {
    let job = job_manifest(name, exit, json!({}));
    let mut manifest = json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {"schedule": "* * * * *",
                 "jobTemplate": {"metadata": {"labels": {"cron": name}}, "spec": job.spec}},
    });
    if let (Some(target), Value::Object(extra)) = (manifest["spec"].as_object_mut(), spec) {
        target.extend(extra);
    }
    serde_json::from_value(manifest).unwrap()
}

/// Sets the clock one second past the first scheduled minute after the CronJob's
/// creation, and has the controller look.
async fn begin(cronjobs: &Api<CronJob>, name: &str, clock: &kyb_controllers::clock::FakeClock) {
    let created = cronjobs
        .get(name)
        .await
        .unwrap()
        .metadata
        .creation_timestamp
        .unwrap()
        .0
        .as_second();
    clock.set(k8s_openapi::jiff::Timestamp::from_second((created / 60 + 1) * 60 + 1).unwrap());
    poke(cronjobs, name, 0).await;
}

/// Nudges the controller to look at a CronJob again (after the clock moved).
async fn poke(cronjobs: &Api<CronJob>, name: &str, n: u32) {
    let patch = json!({"metadata": {"annotations": {"kyb.test/poke": n.to_string()}}});
    cronjobs
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

async fn job_names(jobs: &Api<Job>, cron: &str) -> Vec<String> {
    let mut names: Vec<String> = jobs
        .list(&ListParams::default().labels(&format!("cron={cron}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|j| j.metadata.deletion_timestamp.is_none())
        .map(|j| j.metadata.name.unwrap())
        .collect();
    names.sort();
    names
}

fn minute_name(cron: &str, clock: &kyb_controllers::clock::FakeClock) -> String {
    use kyb_controllers::clock::Clock;
    format!("{cron}-{}", clock.now().as_second() / 60)
}

#[tokio::test]
async fn cronjobs_run_on_schedule_forbid_and_replace() {
    let (cluster, client, _kubelet, clock) = start_cron().await;
    let cronjobs: Api<CronJob> = Api::namespaced(client.clone(), "default");
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    cronjobs
        .create(
            &PostParams::default(),
            &cronjob_manifest("tick", None, json!({"concurrencyPolicy": "Forbid"})),
        )
        .await
        .unwrap();
    begin(&cronjobs, "tick", &clock).await;
    // The first minute after creation is due: one Job, named for its minute.
    let first = minute_name("tick", &clock);
    wait_for("the first job", || async {
        (job_names(&jobs, "tick").await == [first.clone()]).then_some(())
    })
    .await;
    let job = jobs.get(&first).await.unwrap();
    let stamp = &job.metadata.annotations.as_ref().unwrap()[SCHEDULED];
    assert_eq!(
        stamp
            .parse::<k8s_openapi::jiff::Timestamp>()
            .unwrap()
            .as_second()
            % 60,
        0
    );
    let owner = &job.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("CronJob", "tick")
    );
    let status = wait_for("status.active", || async {
        let status = cronjobs.get("tick").await.ok()?.status?;
        (status.active.as_ref().map(Vec::len) == Some(1)).then_some(status)
    })
    .await;
    assert!(status.last_schedule_time.is_some());

    // Forbid: the job still runs, so the next minute starts nothing.
    clock.advance(Duration::from_secs(60));
    poke(&cronjobs, "tick", 1).await;
    wait_for("the JobAlreadyActive event", || async {
        events_of(&client, "tick")
            .await
            .iter()
            .any(|(r, _)| r == "JobAlreadyActive")
            .then_some(())
    })
    .await;
    assert_eq!(job_names(&jobs, "tick").await, std::slice::from_ref(&first));
    let described = cluster.kubectl_ok(&["describe", "cronjob", "tick"]);
    let events = described.split("Events:").nth(1).unwrap_or_default();
    let has = |reason: &str, message: &str| {
        events
            .lines()
            .any(|l| l.contains(reason) && l.contains(message))
    };
    assert!(
        has("SuccessfulCreate", &format!("Created job {first}"))
            && has("JobAlreadyActive", "concurrency policy is Forbid"),
        "{described}"
    );

    // Replace: the running job gives way to the new one.
    let replace = json!({"spec": {"concurrencyPolicy": "Replace"}});
    cronjobs
        .patch("tick", &PatchParams::default(), &Patch::Merge(&replace))
        .await
        .unwrap();
    clock.advance(Duration::from_secs(60));
    let third = minute_name("tick", &clock);
    poke(&cronjobs, "tick", 2).await;
    wait_for("the replacement", || async {
        (job_names(&jobs, "tick").await == [third.clone()]).then_some(())
    })
    .await;
    // Events are written asynchronously.
    let wanted = [
        (
            "SuccessfulCreate".to_string(),
            format!("Created job {first}"),
        ),
        (
            "SuccessfulDelete".to_string(),
            format!("Deleted job {first}"),
        ),
        (
            "SuccessfulCreate".to_string(),
            format!("Created job {third}"),
        ),
    ];
    wait_for("the create and delete events", || async {
        let events = events_of(&client, "tick").await;
        wanted.iter().all(|w| events.contains(w)).then_some(())
    })
    .await;
}

#[tokio::test]
async fn cronjobs_keep_their_history_limits() {
    let (_cluster, client, _kubelet, clock) = start_cron().await;
    let cronjobs: Api<CronJob> = Api::namespaced(client.clone(), "default");
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    cronjobs
        .create(
            &PostParams::default(),
            &cronjob_manifest("done", Some("0"), json!({"successfulJobsHistoryLimit": 1})),
        )
        .await
        .unwrap();
    begin(&cronjobs, "done", &clock).await;
    let mut names = vec![];
    for n in 0..3u32 {
        if n > 0 {
            clock.advance(Duration::from_secs(60));
            poke(&cronjobs, "done", n).await;
        }
        let name = minute_name("done", &clock);
        wait_for(&format!("job {name} to complete"), || async {
            let job = jobs.get(&name).await.ok()?;
            condition(&job, "Complete")
                .filter(|c| c.0 == "True")
                .map(|_| ())
        })
        .await;
        names.push(name);
    }
    // Only the newest completed job is kept.
    wait_for("history to be pruned", || async {
        (job_names(&jobs, "done").await == [names[2].clone()]).then_some(())
    })
    .await;
    let status = wait_for("lastSuccessfulTime", || async {
        let status = cronjobs.get("done").await.ok()?.status?;
        (status.last_successful_time.is_some() && status.active.is_none()).then_some(status)
    })
    .await;
    assert!(status.last_schedule_time.is_some());
    wait_for("the SawCompletedJob event", || async {
        let events = events_of(&client, "done").await;
        events
            .iter()
            .any(|(r, m)| {
                r == "SawCompletedJob"
                    && m.starts_with("Saw completed job: done-")
                    && m.ends_with("condition: Complete")
            })
            .then_some(())
    })
    .await;
}
