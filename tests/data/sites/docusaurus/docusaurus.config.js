// excerpt of facebook/docusaurus website/docusaurus.config.ts: only what esrag reads
export default {
  title: 'Docusaurus',
  url: 'https://docusaurus.io',
  baseUrl: '/',
  presets: [
    [
      'classic',
      {
        docs: {
          // routeBasePath: '/',
          path: 'docs',
        },
      },
    ],
  ],
};
