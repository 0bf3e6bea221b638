import{a,b,c}from"./chunk-LO57GIFS.js";import"./chunk-HR7VDWJL.js";export{b as Credentials,c as TestOutcome,a as providerWords};
