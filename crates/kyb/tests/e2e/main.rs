//! `kyb` as users run it: the binary's command line, and a running `kyb server` driven by the
//! real kubectl and by kube-rs.

#![allow(clippy::unwrap_used)]

mod admission;
mod at_rest;
mod audit;
mod authorization;
mod autoscaling;
mod batch;
mod certificates;
mod cli;
mod client;
mod cluster;
mod components;
mod controller_manager;
mod events;
mod evictions;
mod flowcontrol;
mod garbage_collection;
mod grpc_probe;
mod hardening;
mod http;
mod images;
mod kubectl;
mod kubelet;
mod kubelet_api;
mod logs;
mod metrics;
mod net_controllers;
mod node;
mod node_agent;
mod nodes;
mod patch;
mod pods;
mod policies;
mod poll;
mod protobuf;
mod quota_controller;
mod resources;
mod scheduling;
mod security;
mod service_accounts;
mod sets;
mod streaming;
mod volumes;
mod webhook_server;
mod webhooks;
mod workflows;
mod workloads;
