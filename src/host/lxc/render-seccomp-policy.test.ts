import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderSeccompPolicy, seccompConfigFromKeys } from './render-seccomp-policy.ts';

test('LXD defaults: deny_default on, nothing else', () => {
  const c = seccompConfigFromKeys({});
  assert.deepEqual(c, { denyDefault: true, denyCompat: false, deny: [], allow: [] });
  assert.equal(
    renderSeccompPolicy(c),
    `2
denylist
reject_force_umount  # comment this to allow umount -f;  not recommended
[all]
kexec_load errno 38
open_by_handle_at errno 38
init_module errno 38
finit_module errno 38
delete_module errno 38
`,
  );
});

test('golden: default + custom deny lines + compat section last', () => {
  const c = seccompConfigFromKeys(
    { 'security.syscalls.blacklist': 'mount errno 1\n\n  keyctl  \n', 'security.syscalls.blacklist_compat': 'true' },
    'x86_64',
  );
  const text = renderSeccompPolicy(c)!;
  assert.ok(
    text.startsWith(`2
denylist
reject_force_umount  # comment this to allow umount -f;  not recommended
[all]
kexec_load errno 38
open_by_handle_at errno 38
init_module errno 38
finit_module errno 38
delete_module errno 38
mount errno 1
keyctl
[x86_64]
compat_sys_rt_sigaction errno 38
stub_x32_rt_sigreturn errno 38
`),
    text,
  );
  assert.ok(text.endsWith('compat_sys_io_submit errno 38\nstub_x32_execveat errno 38\n'));
  assert.equal(text.split('\n').filter((l) => l.endsWith('errno 38')).length, 5 + 34);
});

test('deny lines without the defaults get their own [all] section; nothing at all → no policy', () => {
  assert.equal(
    renderSeccompPolicy(
      seccompConfigFromKeys({
        'security.syscalls.blacklist_default': 'false',
        'security.syscalls.blacklist': 'ptrace errno 1',
      }),
    ),
    '2\ndenylist\n[all]\nptrace errno 1\n',
  );
  assert.equal(
    renderSeccompPolicy(seccompConfigFromKeys({ 'security.syscalls.blacklist_default': 'false' })),
    undefined,
  );
});

test('allowlist excludes every deny setting (the implicit deny_default is dropped)', () => {
  assert.equal(
    renderSeccompPolicy(seccompConfigFromKeys({ 'security.syscalls.whitelist': 'read\nwrite\nexit_group' })),
    '2\nallowlist\n[all]\nread\nwrite\nexit_group\n',
  );
  assert.throws(
    () =>
      renderSeccompPolicy(
        seccompConfigFromKeys({ 'security.syscalls.whitelist': 'read', 'security.syscalls.blacklist': 'mount' }),
      ),
    /cannot be combined/,
  );
  assert.throws(
    () => renderSeccompPolicy({ denyDefault: false, denyCompat: true, deny: [], allow: [] }),
    /needs the container architecture/,
  );
  assert.throws(
    () => renderSeccompPolicy({ denyDefault: true, denyCompat: false, deny: ['a\rb'], allow: [] }),
    /line break/,
  );
});
