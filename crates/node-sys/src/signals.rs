//! Signals to other processes: how the agent stops the processes it supervises
//! (containerd: SIGTERM, then SIGKILL after a deadline).

use rustix::process::{Pid, Signal};

/// The signals the node's components send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessSignal {
    /// SIGTERM: asks the process to exit.
    Terminate,
    /// SIGKILL: ends it.
    Kill,
}

/// Why a signal could not be sent.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{pid} is not a process id")]
    InvalidPid { pid: u32 },
    #[error("sending {signal:?} to process {pid}: {source}")]
    Send {
        pid: u32,
        signal: ProcessSignal,
        #[source]
        source: std::io::Error,
    },
}

/// Sends `signal` to process `pid` (needs the right to signal it: the same user, or root).
pub fn send(pid: u32, signal: ProcessSignal) -> Result<(), Error> {
    let raw = i32::try_from(pid).map_err(|_| Error::InvalidPid { pid })?;
    let target = Pid::from_raw(raw).ok_or(Error::InvalidPid { pid })?;
    let number = match signal {
        ProcessSignal::Terminate => Signal::TERM,
        ProcessSignal::Kill => Signal::KILL,
    };
    rustix::process::kill_process(target, number).map_err(|errno| Error::Send {
        pid,
        signal,
        source: errno.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminates_a_child_and_refuses_pid_zero() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep starts");
        send(child.id(), ProcessSignal::Terminate).expect("signalled");
        let status = child.wait().expect("waited");
        assert!(!status.success());
        assert!(matches!(
            send(0, ProcessSignal::Kill),
            Err(Error::InvalidPid { pid: 0 })
        ));
    }
}
