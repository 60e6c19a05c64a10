#!/usr/bin/env node
// A committed entry point, so package managers can link the command before the package is
// built (the compiled program lives in dist/).
import '../dist/bin/keepsake-conformance-report.js';
