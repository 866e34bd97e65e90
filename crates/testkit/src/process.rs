//! A child process whose output a test can wait on, stopped when dropped.

use anyhow::{Context, bail};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A child process with its stderr (and stdout) collected line by line.
pub struct Process {
    child: Child,
    output: Arc<(Mutex<Vec<String>>, Condvar)>,
}

impl Process {
    pub fn spawn(command: &mut Command) -> anyhow::Result<Self> {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {command:?}"))?;
        let output = Arc::new((Mutex::new(Vec::new()), Condvar::new()));
        let stdout = child.stdout.take().context("no stdout")?;
        let stderr = child.stderr.take().context("no stderr")?;
        collect(stdout, output.clone());
        collect(stderr, output.clone());
        Ok(Self { child, output })
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Everything printed so far.
    pub fn output(&self) -> String {
        let lines = self.output.0.lock().map(|l| l.join("\n"));
        lines.unwrap_or_default()
    }

    /// Waits until a line containing `needle` is printed; fails if the process exits or
    /// the deadline passes first.
    pub fn wait_for_line(&mut self, needle: &str, timeout: Duration) -> anyhow::Result<String> {
        let deadline = Instant::now() + timeout;
        loop {
            {
                let (lines, _) = &*self.output;
                let lines = lines
                    .lock()
                    .map_err(|_| anyhow::anyhow!("output lock poisoned"))?;
                if let Some(line) = lines.iter().find(|l| l.contains(needle)) {
                    return Ok(line.clone());
                }
            }
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "exited ({status}) before printing {needle:?}:\n{}",
                    self.output()
                );
            }
            if Instant::now() > deadline {
                bail!(
                    "{needle:?} not printed within {timeout:?}:\n{}",
                    self.output()
                );
            }
            let (lines, printed) = &*self.output;
            let guard = lines
                .lock()
                .map_err(|_| anyhow::anyhow!("output lock poisoned"))?;
            let _ = printed.wait_timeout(guard, Duration::from_millis(50));
        }
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) -> anyhow::Result<()> {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .context("running kill")?;
        if !status.success() {
            bail!("kill -TERM {} failed: {status}", self.child.id());
        }
        Ok(())
    }

    /// Waits for the process to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> anyhow::Result<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                // Let the readers take the last lines.
                std::thread::sleep(Duration::from_millis(20));
                return Ok(status);
            }
            if Instant::now() > deadline {
                bail!("still running after {timeout:?}:\n{}", self.output());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn collect(
    stream: impl std::io::Read + Send + 'static,
    output: Arc<(Mutex<Vec<String>>, Condvar)>,
) {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            let (lines, printed) = &*output;
            if let Ok(mut lines) = lines.lock() {
                lines.push(line);
            }
            printed.notify_all();
        }
    });
}
