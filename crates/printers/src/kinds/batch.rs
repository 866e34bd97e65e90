//! Jobs and CronJobs.

use super::{
    AGE, CONTAINERS, IMAGES, NAME, Printer, SELECTOR, boolean, container_cells, int, integer, name,
    owned, string,
};
use crate::duration::human_duration;
use crate::fields::text;
use crate::selectors::format_label_selector;
use crate::timestamp::{self, age, nanos_between};
use jiff::Timestamp;
use kyb_apimachinery::json::{at, count, int_at, items, opt_bool, opt_int, str_at};
use kyb_apimachinery::meta::is_deleting;
use serde_json::Value;

pub(crate) static JOB: Printer = Printer {
    columns: &[
        NAME,
        string(
            "Status",
            "Where the job stands: Running, Complete, Failed, Suspended…",
        ),
        string("Completions", "Pods that succeeded out of those needed."),
        string("Duration", "How long the job ran, or has been running."),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: job_cells,
};

/// Whether the first condition of this type is true.
fn has_condition(job: &Value, condition_type: &str) -> bool {
    items(job, &["status", "conditions"])
        .iter()
        .find(|c| str_at(c, &["type"]) == condition_type)
        .is_some_and(|c| str_at(c, &["status"]) == "True")
}

fn job_status(job: &Value) -> &'static str {
    if has_condition(job, "Complete") {
        "Complete"
    } else if has_condition(job, "Failed") {
        "Failed"
    } else if is_deleting(job) {
        "Terminating"
    } else if has_condition(job, "Suspended") {
        "Suspended"
    } else if has_condition(job, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    }
}

fn completions(job: &Value) -> String {
    let succeeded = int_at(job, &["status", "succeeded"]);
    if let Some(wanted) = opt_int(job, &["spec", "completions"]) {
        return format!("{succeeded}/{wanted}");
    }
    let parallelism = opt_int(job, &["spec", "parallelism"]).unwrap_or(0);
    if parallelism > 1 {
        format!("{succeeded}/1 of {parallelism}")
    } else {
        format!("{succeeded}/1")
    }
}

fn duration(job: &Value, now: Timestamp) -> String {
    let Some(start) = timestamp::parse(at(job, &["status", "startTime"])) else {
        return String::new();
    };
    let end = timestamp::parse(at(job, &["status", "completionTime"])).unwrap_or(now);
    human_duration(nanos_between(start, end))
}

fn job_cells(job: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = container_cells(at(job, &["spec", "template", "spec"]));
    vec![
        name(job),
        text(job_status(job)),
        owned(completions(job)),
        owned(duration(job, now)),
        age(job, now),
        names,
        images,
        owned(format_label_selector(at(job, &["spec", "selector"]))),
    ]
}

pub(crate) static CRON_JOB: Printer = Printer {
    columns: &[
        NAME,
        string("Schedule", "The cron schedule jobs are started on."),
        string("Timezone", "The time zone the schedule is read in."),
        boolean("Suspend", "Whether new runs are held back."),
        integer("Active", "Jobs of this CronJob running now."),
        string("Last Schedule", "How long ago a job was last scheduled."),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: cron_job_cells,
};

fn cron_job_cells(cron_job: &Value, now: Timestamp) -> Vec<Value> {
    let job_spec = at(cron_job, &["spec", "jobTemplate", "spec"]);
    let (names, images) =
        container_cells(job_spec.and_then(|spec| at(spec, &["template", "spec"])));
    let suspend = match opt_bool(cron_job, &["spec", "suspend"]) {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    };
    let last_schedule = match at(cron_job, &["status", "lastScheduleTime"]) {
        Some(time) => timestamp::since_value(Some(time), now),
        None => "<none>".to_owned(),
    };
    vec![
        name(cron_job),
        text(str_at(cron_job, &["spec", "schedule"])),
        text(kyb_apimachinery::json::opt_str(cron_job, &["spec", "timeZone"]).unwrap_or("<none>")),
        text(suspend),
        int(count(cron_job, &["status", "active"])),
        owned(last_schedule),
        age(cron_job, now),
        names,
        images,
        owned(format_label_selector(
            job_spec.and_then(|spec| at(spec, &["selector"])),
        )),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::testing::{ago, now, row};
    use serde_json::json;

    fn job(spec: Value, status: Value) -> Value {
        let mut spec = spec;
        spec["template"] = json!({"spec": {"containers": [{"name": "pi", "image": "perl:5"}]}});
        spec["selector"] = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "abc"}});
        json!({"metadata": {"name": "pi", "creationTimestamp": ago(600)}, "spec": spec, "status": status})
    }

    #[test]
    fn completed_job_row() {
        let j = job(
            json!({"completions": 1, "parallelism": 1}),
            json!({"succeeded": 1, "startTime": ago(600), "completionTime": ago(590),
                   "conditions": [{"type": "SuccessCriteriaMet", "status": "True"},
                                  {"type": "Complete", "status": "True"}]}),
        );
        assert_eq!(
            row(job_cells(&j, now())),
            json!([
                "pi",
                "Complete",
                "1/1",
                "10s",
                "10m",
                "pi",
                "perl:5",
                "batch.kubernetes.io/controller-uid=abc"
            ])
        );
    }

    #[test]
    fn running_job_duration_counts_up_to_now() {
        let j = job(
            json!({"completions": 5}),
            json!({"succeeded": 2, "startTime": ago(150)}),
        );
        let cells = job_cells(&j, now());
        assert_eq!(cells[1], json!("Running"));
        assert_eq!(cells[2], json!("2/5"));
        assert_eq!(cells[3], json!("2m30s"));
    }

    #[test]
    fn completions_without_a_count() {
        assert_eq!(
            completions(&json!({"spec": {"parallelism": 3}, "status": {"succeeded": 1}})),
            "1/1 of 3"
        );
        assert_eq!(completions(&json!({"spec": {"parallelism": 1}})), "0/1");
        assert_eq!(completions(&json!({})), "0/1");
    }

    #[test]
    fn job_statuses_in_precedence_order() {
        let with = |conditions: Value, deleting: bool| {
            let mut j = json!({"status": {"conditions": conditions}});
            if deleting {
                j["metadata"] = json!({"deletionTimestamp": ago(1)});
            }
            job_status(&j)
        };
        assert_eq!(
            with(json!([{"type": "Failed", "status": "True"}]), true),
            "Failed"
        );
        assert_eq!(
            with(json!([{"type": "Complete", "status": "False"}]), true),
            "Terminating"
        );
        assert_eq!(
            with(json!([{"type": "Suspended", "status": "True"}]), false),
            "Suspended"
        );
        assert_eq!(
            with(json!([{"type": "FailureTarget", "status": "True"}]), false),
            "FailureTarget"
        );
        assert_eq!(
            with(json!([{"type": "Suspended", "status": "False"}]), false),
            "Running"
        );
        // The first condition of a type decides.
        assert_eq!(
            with(
                json!([{"type": "Complete", "status": "False"}, {"type": "Complete", "status": "True"}]),
                false
            ),
            "Running"
        );
    }

    #[test]
    fn job_without_start_has_empty_duration() {
        assert_eq!(job_cells(&json!({}), now())[3], json!(""));
    }

    #[test]
    fn cron_job_row() {
        let c = json!({
            "metadata": {"name": "nightly", "creationTimestamp": ago(2 * 86400)},
            "spec": {"schedule": "0 3 * * *", "suspend": false,
                     "jobTemplate": {"spec": {"template": {"spec": {"containers": [
                         {"name": "backup", "image": "backup:1"}]}}}}},
            "status": {"active": [{"name": "nightly-1"}], "lastScheduleTime": ago(3600)}
        });
        assert_eq!(
            row(cron_job_cells(&c, now())),
            json!([
                "nightly",
                "0 3 * * *",
                "<none>",
                "False",
                1,
                "60m",
                "2d",
                "backup",
                "backup:1",
                "<none>"
            ])
        );
        let c = json!({"spec": {"schedule": "@hourly", "timeZone": "Europe/Paris"}});
        assert_eq!(
            row(cron_job_cells(&c, now())),
            json!([
                "",
                "@hourly",
                "Europe/Paris",
                "<unset>",
                0,
                "<none>",
                "<unknown>",
                "",
                "",
                "<none>"
            ])
        );
    }
}
