"""The compatibility matrix of issue #15: settings and plugins, plain vs --genome."""
