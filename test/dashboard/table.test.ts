import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { num, Table } from '../../src/modules/dashboard/views/table.js';

const render = (props: Parameters<typeof Table>[0]) => String(Table(props));

describe('the dashboard Table', () => {
  it('labels every cell with its column, escapes text and keeps the markup a page built', () => {
    const html = render({
      caption: 'Partners',
      columns: ['Name', 'Site', num('Clicks')],
      rows: [
        [
          { rowHeader: true, text: '<b>Pat & Co</b>' },
          { html: '<a href="https://pat.example/">pat.example</a>' },
          { class: 'num', text: 1234 },
        ],
        [{ rowHeader: true, text: 'Sam' }, { text: null }, { class: 'num', text: 0 }],
      ],
    });
    const rows = html.match(/<tbody>.*<\/tbody>/)?.[0] ?? '';
    assert.equal(
      rows,
      '<tbody><tr><th scope="row" data-label="Name">&lt;b>Pat &amp; Co&lt;/b></th>' +
        '<td data-label="Site"><a href="https://pat.example/">pat.example</a></td>' +
        '<td class="num" data-label="Clicks">1234</td></tr>' +
        '<tr><th scope="row" data-label="Name">Sam</th><td data-label="Site"></td>' +
        '<td class="num" data-label="Clicks">0</td></tr></tbody>',
    );
  });

  it('labels a spanning cell with its first column, and each totals row on its own', () => {
    const html = render({
      caption: 'Report',
      columns: ['Offer', 'Partner', num('Clicks')],
      rows: [
        [
          { rowHeader: true, text: 'Shoes' },
          { rowHeader: true, text: 'Pat' },
          { class: 'num', text: 3 },
        ],
      ],
      foot: [
        [
          { rowHeader: true, span: 2, text: 'Total EUR' },
          { class: 'num', text: 2 },
        ],
        [
          { rowHeader: true, span: 2, text: 'Total USD' },
          { class: 'num', text: 1 },
        ],
      ],
    });
    const foot = html.match(/<tfoot>.*<\/tfoot>/)?.[0] ?? '';
    assert.equal(
      foot,
      '<tfoot><tr><th scope="row" colspan="2" data-label="Offer">Total EUR</th>' +
        '<td class="num" data-label="Clicks">2</td></tr>' +
        '<tr><th scope="row" colspan="2" data-label="Offer">Total USD</th>' +
        '<td class="num" data-label="Clicks">1</td></tr></tfoot>',
    );
  });

  it('shows `empty` instead of a table without rows, and no labels without columns', () => {
    assert.equal(
      render({ caption: 'None', rows: [], empty: '<p>Nothing yet</p>' }),
      '<div class="table-wrap"><p>Nothing yet</p></div>',
    );
    const html = render({ caption: 'Plain', rows: [[{ text: 'a' }]] });
    assert.match(html, /<tbody><tr><td>a<\/td><\/tr><\/tbody>/);
    assert.doesNotMatch(html, /data-label/);
  });
});
