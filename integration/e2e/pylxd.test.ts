import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, expectError, type Client } from '../support/http.ts';

/**
 * One pylxd session per step: `python3 -c SCRIPT <step>` prints a JSON object on its last line.
 * pylxd 2.2.10 has no projects model (pylxd/models/ has no project.py), so the projects steps use
 * its generic `client.api` tree, with operations awaited through `pylxd.models.Operation`.
 */
const SCRIPT = String.raw`
import json, sys
import pylxd
from pylxd import exceptions
from pylxd.models import Operation

def err(fn):
    try:
        fn()
    except exceptions.NotFound as e:
        return {'kind': 'NotFound', 'status': e.response.status_code, 'message': str(e)}
    except exceptions.LXDAPIException as e:
        return {'kind': 'LXDAPIException', 'status': e.response.status_code, 'message': str(e)}
    return None

def show(p):
    return {'name': p.name, 'description': p.description, 'config': p.config, 'devices': p.devices, 'used_by': p.used_by}

c = pylxd.Client()
names = lambda: sorted(p.name for p in c.profiles.all())
step = sys.argv[1]
out = {}
if step == 'connect':
    out = {'trusted': c.trusted, 'driver': c.host_info['environment']['driver'],
           'server_pid': c.host_info['environment']['server_pid'], 'profiles': names(),
           'has_projects_ext': c.has_api_extension('projects')}
elif step == 'create':
    p = c.profiles.create('pyweb', config={'limits.cpu': '2', 'user.from': 'pylxd'}, devices={})
    out = {'created': show(p), 'profiles': names(), 'exists': c.profiles.exists('pyweb'), 'missing_exists': c.profiles.exists('nope'),
           'duplicate': err(lambda: c.profiles.create('pyweb')),
           'bad_key': err(lambda: c.profiles.create('pybad', config={'limits.bogus': '1'}))}
elif step == 'save':
    p = c.profiles.get('pyweb')
    p.description = 'made by pylxd'
    p.config = dict(p.config, **{'limits.memory': '512MiB'})
    p.save()
    out = {'saved': show(c.profiles.get('pyweb'))}
elif step == 'rename':
    r = c.profiles.get('pyweb').rename('pyweb2')
    out = {'renamed': show(r), 'old_exists': c.profiles.exists('pyweb'),
           'onto_default': err(lambda: c.profiles.get('pyweb2').rename('default')),
           'rename_default': err(lambda: c.profiles.get('default').rename('other'))}
elif step == 'delete':
    c.profiles.get('pyweb2').delete()
    out = {'profiles': names(), 'get_deleted': err(lambda: c.profiles.get('pyweb2')),
           'delete_default': err(lambda: c.profiles.get('default').delete())}
elif step == 'projects':
    projects = c.api.projects
    created = projects.post(json={'name': 'pyproj', 'description': 'from pylxd', 'config': {'user.k': 'v'}})
    before = projects.get().json()['metadata']
    renamed = projects['pyproj'].post(json={'name': 'pyproj2'})
    body = renamed.json()
    op = Operation.wait_for_operation(c, body['operation']) if body['type'] == 'async' else None
    out = {'create_status': created.status_code, 'before': before, 'rename_status': renamed.status_code, 'rename_type': body['type'],
           'op': op and {'status': op.status, 'status_code': op.status_code, 'err': op.err},
           'after': projects.get().json()['metadata'],
           'got': projects['pyproj2'].get().json()['metadata'],
           'duplicate': err(lambda: projects.post(json={'name': 'pyproj2'})),
           'delete_default': err(lambda: projects['default'].delete())}
elif step == 'project-delete':
    deleted = c.api.projects['pyproj2'].delete()
    out = {'delete_status': deleted.status_code, 'after': c.api.projects.get().json()['metadata'],
           'get_deleted': err(lambda: c.api.projects['pyproj2'].get())}
else:
    raise SystemExit('unknown step ' + step)
print(json.dumps(out))
`;

function pylxd(stateDir: string, step: string): Promise<any> {
  return new Promise((resolve, reject) => {
    execFile(
      '/usr/bin/python3',
      ['-c', SCRIPT, step],
      { env: { PATH: '/usr/bin:/bin', LXD_DIR: stateDir, PYTHONDONTWRITEBYTECODE: '1' }, timeout: 60_000 },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`pylxd step ${step} failed: ${err.message}\n${stderr}`));
        const last = stdout.trim().split('\n').pop() ?? '';
        try {
          resolve(JSON.parse(last));
        } catch {
          reject(new Error(`pylxd step ${step} printed no JSON:\n${stdout}\n${stderr}`));
        }
      },
    );
  });
}

describe('python3-pylxd 2.2.10 against svcd', () => {
  let d: Daemon;
  let api: Client;
  const step = (name: string) => pylxd(d.stateDir, name);

  before(async () => {
    d = await startDaemon();
    api = client({ socketPath: d.socketPath });
  });
  after(async () => d?.destroy());

  test('Client() connects through LXD_DIR and sees the trusted host info', async () => {
    const out = await step('connect');
    assert.equal(out.trusted, true);
    assert.equal(out.driver, 'lxc');
    assert.equal(out.server_pid, d.proc.pid);
    assert.deepEqual(out.profiles, ['default']);
    assert.equal(out.has_projects_ext, true);
  });

  test('profiles.create; duplicate and unknown key raise LXDAPIException with the daemon message', async () => {
    const out = await step('create');
    assert.deepEqual(out.created, {
      name: 'pyweb',
      description: '',
      config: { 'limits.cpu': '2', 'user.from': 'pylxd' },
      devices: {},
      used_by: [],
    });
    assert.deepEqual(out.profiles, ['default', 'pyweb']);
    assert.equal(out.exists, true);
    assert.equal(out.missing_exists, false);
    assert.equal(out.duplicate.kind, 'LXDAPIException');
    assert.equal(out.duplicate.status, 409);
    assert.equal(out.duplicate.message, expectError(await api.post('/1.0/profiles', { name: 'pyweb' }), 409));
    assert.equal(out.bad_key.status, 400);
    assert.match(out.bad_key.message, /limits\.bogus/);
    const rest = await api.get('/1.0/profiles/pyweb');
    assert.deepEqual(rest.json.metadata, out.created);
    expectError(await api.get('/1.0/profiles/pybad'), 404);
  });

  test('profile.description = ...; profile.save() PUTs the profile', async () => {
    const out = await step('save');
    const expected = {
      name: 'pyweb',
      description: 'made by pylxd',
      config: { 'limits.cpu': '2', 'user.from': 'pylxd', 'limits.memory': '512MiB' },
      devices: {},
      used_by: [],
    };
    assert.deepEqual(out.saved, expected);
    assert.deepEqual((await api.get('/1.0/profiles/pyweb')).json.metadata, expected);
  });

  test('profile.rename(); renaming onto an existing name or renaming default raises', async () => {
    const out = await step('rename');
    assert.equal(out.renamed.name, 'pyweb2');
    assert.equal(out.renamed.description, 'made by pylxd');
    assert.equal(out.old_exists, false);
    assert.equal(out.onto_default.status, 409);
    assert.equal(out.rename_default.status, 403);
    expectError(await api.get('/1.0/profiles/pyweb'), 404);
    const rest = (await api.get('/1.0/profiles/pyweb2')).json.metadata;
    assert.equal(rest.description, 'made by pylxd');
    assert.equal(rest.config['limits.memory'], '512MiB');
    assert.equal((await api.get('/1.0/profiles/other')).status, 404, 'the refused rename of default created nothing');
  });

  test('profile.delete(); the default profile cannot be deleted; a deleted profile is NotFound', async () => {
    const out = await step('delete');
    assert.deepEqual(out.profiles, ['default']);
    assert.equal(out.get_deleted.kind, 'NotFound');
    assert.equal(out.delete_default.status, 403);
    expectError(await api.get('/1.0/profiles/pyweb2'), 404);
    assert.deepEqual((await api.get('/1.0/profiles')).json.metadata, ['/1.0/profiles/default']);
  });

  test('projects through client.api: create, rename (an async operation pylxd waits on), refusals', async () => {
    const out = await step('projects');
    assert.equal(out.create_status, 200);
    assert.deepEqual(out.before, ['/1.0/projects/default', '/1.0/projects/pyproj']);
    assert.equal(out.rename_status, 202);
    assert.equal(out.rename_type, 'async');
    assert.deepEqual(out.op, { status: 'Success', status_code: 200, err: '' });
    assert.deepEqual(out.after, ['/1.0/projects/default', '/1.0/projects/pyproj2']);
    assert.equal(out.got.description, 'from pylxd');
    assert.equal(out.got.config['user.k'], 'v');
    assert.equal(out.duplicate.status, 409);
    assert.equal(out.delete_default.status, 403);
    expectError(await api.get('/1.0/projects/pyproj'), 404);
    const rest = (await api.get('/1.0/projects/pyproj2')).json.metadata;
    assert.equal(rest.description, 'from pylxd');
    assert.deepEqual(rest.used_by, ['/1.0/profiles/default?project=pyproj2']);
    assert.equal((await api.get('/1.0/projects/default')).status, 200);
  });

  test('project delete through client.api', async () => {
    const out = await step('project-delete');
    assert.equal(out.delete_status, 202);
    assert.deepEqual(out.after, ['/1.0/projects/default']);
    assert.equal(out.get_deleted.kind, 'NotFound');
    expectError(await api.get('/1.0/projects/pyproj2'), 404);
    expectError(await api.get('/1.0/profiles/default?project=pyproj2'), 404);
  });
});
