import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderPlainSubstitutions, renderTemplate, type TemplateContext } from './render-template.ts';

const ctx = (over: Partial<TemplateContext> = {}): TemplateContext => ({
  trigger: 'start',
  path: '/etc/motd',
  container: { name: 'web1', architecture: 'x86_64', privileged: 'false', ephemeral: 'false' },
  config: { 'user.greeting': 'hello\n', 'limits.cpu': '2' },
  devices: { root: { type: 'disk', path: '/', pool: 'default' } },
  properties: { colour: 'blue' },
  ...over,
});

test('renders LXD-style templates: container, instance, config, config_get, properties, devices, trigger, path', async () => {
  const out = await renderTemplate(
    '{{ container.name }}|{{ instance.name }}|{{ config["limits.cpu"] }}|{{ config_get("user.greeting", "x") }}|{{ config_get("user.none", "dflt") }}|{{ properties.colour }}|{{ devices.root.pool }}|{{ trigger }}|{{ path }}|{% if container.privileged == "false" %}unpriv{% endif %}|{% for k, v in properties %}{{ k }}={{ v }}{% endfor %}|{{ "<b>" }}',
    ctx(),
  );
  assert.equal(out, 'web1|web1|2|hello|dflt|blue|default|start|/etc/motd|unpriv|colour=blue|<b>');
});

test('templates cannot reach JavaScript: constructors, prototypes and Object.prototype names are nothing', async () => {
  for (const src of [
    '{{ range.constructor("return process.pid")() }}',
    '{{ cycler.constructor("return process.pid")() }}',
    '{{ "".constructor.constructor("return process.pid")() }}',
    '{{ container.constructor.constructor("return process.pid")() }}',
    '{{ constructor.constructor("return process.pid")() }}',
    '{{ __proto__.constructor.constructor("return process.pid")() }}',
    '{{ config_get.constructor("return process.pid")() }}',
    '{{ container["__proto__"]["constructor"]["constructor"]("return process.pid")() }}',
  ]) {
    const out = await renderTemplate(src, ctx()).catch((e: Error) => `error: ${e.message}`);
    assert.ok(!out.includes(String(process.pid)) && /error|^$/.test(out), `${src} → ${out}`);
  }
  await assert.rejects(renderTemplate('{% include "/etc/passwd" %}', ctx()));
});

test('a template that never ends or eats memory is stopped; syntax errors are reported', async () => {
  await assert.rejects(
    renderTemplate('{% for i in range(100000000) %}{% for j in range(100000000) %}x{% endfor %}{% endfor %}', ctx(), {
      timeoutMs: 1_500,
    }),
    /longer than|memory|larger/,
  );
  await assert.rejects(
    renderTemplate('{% set x = range(300000000) %}{{ x | length }}', ctx(), { timeoutMs: 5_000 }),
    /memory|longer than/,
  );
  await assert.rejects(renderTemplate('{% if %}', ctx()), /./);
});

test('plain substitutions render in-process exactly as the sandboxed renderer does; anything else is left to it', async () => {
  const c = ctx({ properties: { colour: 'blue', n: '{{ x }}' } });
  for (const source of [
    '{{ container.name }}\n',
    '127.0.1.1 {{ instance.name }}\n{{container.architecture}} {{ trigger }} {{ path }}',
    '{{ properties.missing }}|{{ nothing.at.all }}|{{ constructor.name }}|{{ toString }}',
    'no tags at all\n',
  ]) {
    const plain = renderPlainSubstitutions(source, c);
    assert.notEqual(plain, undefined, source);
    // a comment makes the same template go through the sandboxed nunjucks renderer
    assert.equal(plain, await renderTemplate(`${source}{# sandbox #}`, c), source);
  }
  for (const source of [
    '{{ container.name | upper }}',
    '{% if x %}y{% endif %}',
    '{{ config["limits.cpu"] }}',
    '{{- container.name }}',
    '{{ devices.root }}',
    '{{ properties.n }}',
    '{{ container.name.length }}',
    'a }} b',
  ]) {
    assert.equal(renderPlainSubstitutions(source, c), undefined, source);
  }
});
