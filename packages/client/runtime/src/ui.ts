// `@dsh/client-runtime/ui`: the older name of the design system, kept so a browser half built
// against it still loads. The design system is its own package now (`@dsh/client-design`), and
// both names are shared entries of the page's import map that resolve to one module instance.
export * from '@dsh/client-design'
