"""Builds: what a build's output says — its progress, the diagnosis of a failure (rules are data, in
``rules/diagnose.toml``), how a run was stopped, and the build log kept on disk."""
