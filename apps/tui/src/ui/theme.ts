import { createContext, useContext } from 'react';

/** Whether to colour: off with NO_COLOR set (any value, see no-color.org) or TERM=dumb. */
export function colourWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return env.TERM !== 'dumb';
}

export interface Theme {
  readonly colour: boolean;
}

export const ThemeContext = createContext<Theme>({ colour: true });

/** Colour props for Ink's Text: the colour when colouring, nothing otherwise. */
export function useColour(): (colour: string) => string | undefined {
  const { colour } = useContext(ThemeContext);
  return (c) => (colour ? c : undefined);
}

export function useTheme(): Theme {
  return useContext(ThemeContext);
}
