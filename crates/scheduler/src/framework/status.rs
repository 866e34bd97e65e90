//! The outcome of a plugin at an extension point (`framework.Status`): a code, the
//! reasons (what `kubectl describe pod` shows for an unschedulable pod), and the plugin
//! that gave it.

/// What a plugin decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// The plugin ran and the pod may proceed.
    Success,
    /// Something went wrong (not a scheduling decision): the pod is retried with backoff.
    Error,
    /// The pod does not fit here, but preemption might make it fit.
    Unschedulable,
    /// The pod does not fit here and preemption would not help (a node label, taint, …).
    UnschedulableAndUnresolvable,
    /// Permit: the pod waits (for a gang, an approval) before binding.
    Wait,
    /// The plugin has nothing to do for this pod: its later points are skipped
    /// (PreFilter → Filter, PreScore → Score, Bind → the next binder).
    Skip,
    /// PreEnqueue: the pod is not ready to be scheduled yet.
    Pending,
}

/// A plugin's decision with its reasons.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    code: Code,
    reasons: Vec<String>,
    plugin: Option<&'static str>,
}

impl Status {
    pub fn new(code: Code, reasons: Vec<String>) -> Status {
        Status {
            code,
            reasons,
            plugin: None,
        }
    }

    /// Success (allocates nothing).
    pub const fn success() -> Status {
        Status {
            code: Code::Success,
            reasons: Vec::new(),
            plugin: None,
        }
    }

    pub fn error(message: impl Into<String>) -> Status {
        Status::new(Code::Error, vec![message.into()])
    }

    pub fn unschedulable(reason: impl Into<String>) -> Status {
        Status::new(Code::Unschedulable, vec![reason.into()])
    }

    pub fn unresolvable(reason: impl Into<String>) -> Status {
        Status::new(Code::UnschedulableAndUnresolvable, vec![reason.into()])
    }

    pub fn wait() -> Status {
        Status::new(Code::Wait, Vec::new())
    }

    pub const fn skip() -> Status {
        Status {
            code: Code::Skip,
            reasons: Vec::new(),
            plugin: None,
        }
    }

    pub fn pending(reason: impl Into<String>) -> Status {
        Status::new(Code::Pending, vec![reason.into()])
    }

    /// The same status, attributed to `plugin`.
    pub fn with_plugin(mut self, plugin: &'static str) -> Status {
        self.plugin = Some(plugin);
        self
    }

    pub fn code(&self) -> Code {
        self.code
    }

    pub fn is_success(&self) -> bool {
        self.code == Code::Success
    }

    pub fn is_skip(&self) -> bool {
        self.code == Code::Skip
    }

    /// Unschedulable, with or without hope from preemption.
    pub fn is_rejected(&self) -> bool {
        matches!(
            self.code,
            Code::Unschedulable | Code::UnschedulableAndUnresolvable | Code::Pending
        )
    }

    pub fn reasons(&self) -> &[String] {
        &self.reasons
    }

    /// The reasons joined as Kubernetes joins them.
    pub fn message(&self) -> String {
        self.reasons.join(", ")
    }

    pub fn plugin(&self) -> Option<&'static str> {
        self.plugin
    }
}

impl Default for Status {
    fn default() -> Self {
        Status::success()
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.plugin {
            Some(plugin) => write!(f, "{:?} ({plugin}): {}", self.code, self.message()),
            None => write!(f, "{:?}: {}", self.code, self.message()),
        }
    }
}
