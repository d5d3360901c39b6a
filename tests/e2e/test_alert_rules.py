# SPDX-License-Identifier: Apache-2.0
"""The shipped alerting rules (docs/alerts/fairgate-alerts.yml): `promtool
check rules` accepts them, `promtool test rules` passes their unit tests
(docs/alerts/fairgate-alerts.test.yml), every alert has a severity, a summary,
a description and a runbook section in docs/alerts/README.md; and both
promtool runs can fail (a broken expression, a changed threshold).  promtool
missing is a failure (Debian package prometheus; .ci/install-deps)."""
import os
import re
import shutil
import subprocess
import tempfile

import fgtest as t

ALERTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "alerts")
RULES = os.path.join(ALERTS, "fairgate-alerts.yml")
TESTS = os.path.join(ALERTS, "fairgate-alerts.test.yml")
README = os.path.join(ALERTS, "README.md")


def promtool(*args, cwd=None):
    p = subprocess.run([PROMTOOL] + list(args), capture_output=True, text=True, timeout=60, cwd=cwd)
    return p.returncode, (p.stdout + p.stderr).strip()


PROMTOOL = shutil.which("promtool")
t.check(PROMTOOL is not None, "promtool is installed (Debian package prometheus; .ci/install-deps)")
if PROMTOOL is None:
    t.finish()

rc, out = promtool("check", "rules", RULES)
t.check(rc == 0, f"promtool check rules accepts {os.path.basename(RULES)} ({out.splitlines()[-1] if out else ''})")
rc, out = promtool("test", "rules", TESTS)
t.check(rc == 0, f"promtool test rules passes {os.path.basename(TESTS)}" + ("" if rc == 0 else "\n" + out))

# Each alert: a severity label, summary and description, a runbook section.
text = open(RULES).read()
blocks = re.split(r"\n(?=      - alert: )", text)[1:]
names = [re.match(r"      - alert: (\w+)", b_).group(1) for b_ in blocks]
t.check(len(names) == 8, f"8 alerts in group fairgate ({names})")
for name, block in zip(names, blocks):
    t.check(re.search(r"severity: (warning|critical)\n", block) and "summary:" in block and "description:" in block,
            f"{name}: a severity (warning or critical), a summary and a description")
readme = open(README).read()
missing = [n for n in names if f"### {n}\n" not in readme]
t.check(not missing, f"every alert has a runbook section in docs/alerts/README.md (missing: {missing})")
tested = set(re.findall(r"alertname: (\w+)", open(TESTS).read()))
t.check(tested == set(names), f"every alert is unit-tested (not: {sorted(set(names) - tested)})")

# The checks can fail: a broken expression, and a threshold the unit tests do not expect.
tmp = tempfile.mkdtemp(prefix="fg-rules-")
try:
    shutil.copy(TESTS, tmp)
    with open(os.path.join(tmp, "fairgate-alerts.yml"), "w") as f:
        f.write(text.replace("fairgate_worker_busy_ratio > 0.9", "fairgate_worker_busy_ratio > > 0.9"))
    rc, out = promtool("check", "rules", os.path.join(tmp, "fairgate-alerts.yml"))
    t.check(rc != 0, "promtool check rules refuses a broken expression")
    with open(os.path.join(tmp, "fairgate-alerts.yml"), "w") as f:
        f.write(text.replace("(rate(fairgate_flowcontrol_rejected_requests_total[5m])) > 1",
                             "(rate(fairgate_flowcontrol_rejected_requests_total[5m])) > 10"))
    rc, out = promtool("test", "rules", "fairgate-alerts.test.yml", cwd=tmp)
    t.check(rc != 0 and "FairgateRequestsRejected" in out,
            "promtool test rules fails when the rejection threshold changes")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
t.finish()
